package modelfailover

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/agentbreaker/agentbreaker/redact"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"

	"google.golang.org/adk/v2/model"
)

// Route is one model endpoint: a model served from one region. Its LLM is called
// from many goroutines at once and must be safe for concurrent use, as adk's
// Gemini model is.
type Route struct {
	// Name labels the route in logs, events, metrics and response metadata.
	// Defaults to dependencymap.ModelKey(Model, Region), "model@region".
	Name string
	// Model is the model name put on each request sent through this route (the
	// request's Model field). Required.
	Model string
	// Region is where the endpoint runs. It keys the route's breaker together with
	// Model. Defaults to "" (no region).
	Region string
	// LLM serves the route, usually gemini.NewModel with a client for the region.
	// nil means the primary's model serves it with Model put on the request: the
	// same client, another model name. For the failover model that is
	// Routes[0].LLM, which must then be set; for the callbacks it is the agent's
	// own model. Defaults to nil.
	LLM model.LLM
}

// Config configures a [Failover]. New reads it once and keeps copies of what it
// needs; changing it afterwards has no effect.
type Config struct {
	// Routes are tried in order for every call: the primary first, then the
	// fallbacks (the same model in other regions first, then weaker models).
	// Required: at least one.
	Routes []Route
	// Breakers supplies one breaker per route, from ForModel(Model, Region), so that
	// telemetry and admin code see the same breakers. Defaults to a new map with
	// dependencymap's conservative model policy and Clock.
	Breakers *dependencymap.Map
	// Classifier decides what each attempt's error means. Defaults to the classify
	// package's default rules.
	Classifier *classify.Classifier
	// Clock times events and the fallback-share window. Give it the clock of
	// Breakers. Defaults to the system clock.
	Clock clock.Clock
	// Logger receives one warning for every change of the serving route, and debug
	// records of failed attempts (their class and status code, never the text the
	// endpoint sent). Defaults to slog.Default().
	Logger *slog.Logger
	// OnFailover is called once for every change of the serving route (see
	// [Failover] for the rule), to a fallback, back to the primary, or to the
	// unavailable answer, in the order the changes happened. A per-call fallback
	// while the serving route's breaker is closed is not a change. It runs outside
	// any lock of the Failover, usually on the goroutine of the model call that
	// caused the change; keep it quick. Defaults to nil.
	OnFailover func(Event)
	// Observer receives every call and every failover, for metrics and traces.
	// Defaults to nil.
	Observer Observer
	// ShareWindow is the span over which the share of calls served by a fallback
	// is measured. From 1m to 24h. Defaults to 15m.
	ShareWindow time.Duration
	// AttemptTimeout bounds the wait for an attempt's first response: the whole
	// answer of a call that is not streamed, the first chunk of a stream. An
	// attempt that runs out of it counts against its route and fails over; once a
	// stream has sent a chunk, AttemptTimeout no longer applies (ChunkTimeout and
	// CallTimeout do), so a healthy stream is never cut by it. The caller's own
	// deadline never counts. The timers run on Clock when it is a [TimerClock].
	// In the callbacks path, where a callback can neither wrap the agent's own
	// model call's context nor tell whether it streams, the transport made by
	// [NewTransport] enforces it on the HTTP exchange (first data of a stream, or
	// the whole body); without that transport it does not apply to the agent's own
	// model. Defaults to 0: no bound.
	AttemptTimeout time.Duration
	// ChunkTimeout bounds the gap between two chunks of a stream, measured while
	// the attempt waits for the model (not while the caller handles a chunk). A
	// stream that stalls longer fails: as the route's failure, returned to the
	// caller after partial output. In the callbacks path [NewTransport] enforces
	// it from each read that brought data (there the caller's time with a chunk
	// counts in the gap); without that transport it does not apply to the agent's
	// own model. Defaults to 0: no bound.
	ChunkTimeout time.Duration
	// CallTimeout bounds a whole attempt, streamed or not, from its request to its
	// final response. Set it above the longest healthy answer: it cuts a stream
	// that is still sending. In the callbacks path it becomes the request's
	// HTTPOptions.Timeout (for streams too). When both are set it must be at least
	// AttemptTimeout. Defaults to 0: no bound.
	CallTimeout time.Duration
	// UnavailableMessage is the answer given, without calling any model, when every
	// route's breaker is open. Defaults to a sentence saying the assistant is
	// temporarily unable to answer and when to try again.
	UnavailableMessage string
	// PendingTTL bounds how long the callbacks keep a call whose after-model or
	// on-model-error callback never came (a callback after BeforeModel answered
	// instead, so adk skipped the model and the after-model callbacks); its permit
	// is released by a later call once the TTL has passed (the table is swept at
	// most every quarter of it). From 1s to 24h. Defaults to 10m.
	PendingTTL time.Duration
}

// Defaults of Config.
const (
	defaultShareWindow = 15 * time.Minute
	defaultPendingTTL  = 10 * time.Minute
	// Unavailable is the route name used when no route served a call: the
	// unavailable answer was given instead.
	Unavailable  = "unavailable"
	shareBuckets = 15
)

func (cfg *Config) withDefaults() error {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "modelfailover", Field: field, Value: v, Problem: problem, Err: ErrInvalidConfig}
	}
	if len(cfg.Routes) == 0 {
		return bad("Routes", cfg.Routes, "at least one route is required")
	}
	if cfg.ShareWindow == 0 {
		cfg.ShareWindow = defaultShareWindow
	}
	if cfg.ShareWindow < time.Minute || cfg.ShareWindow > 24*time.Hour {
		return bad("ShareWindow", cfg.ShareWindow, "must be between 1m and 24h")
	}
	if cfg.PendingTTL == 0 {
		cfg.PendingTTL = defaultPendingTTL
	}
	if cfg.PendingTTL < time.Second || cfg.PendingTTL > 24*time.Hour {
		return bad("PendingTTL", cfg.PendingTTL, "must be between 1s and 24h")
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"AttemptTimeout", cfg.AttemptTimeout}, {"ChunkTimeout", cfg.ChunkTimeout}, {"CallTimeout", cfg.CallTimeout}} {
		if d.v < 0 {
			return bad(d.field, d.v, "must not be negative")
		}
	}
	if cfg.CallTimeout > 0 && cfg.CallTimeout < cfg.AttemptTimeout {
		return bad("CallTimeout", cfg.CallTimeout,
			fmt.Sprintf("must be at least AttemptTimeout (%s): it bounds the whole attempt", cfg.AttemptTimeout))
	}
	cfg.Clock = clock.OrSystem(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Routes = slices.Clone(cfg.Routes) // names are filled in below
	names := map[string]int{}
	keys := map[string]int{}
	for i, r := range cfg.Routes {
		field := fmt.Sprintf("Routes[%d]", i)
		if r.Model == "" {
			return bad(field+".Model", r.Model, "model name is required")
		}
		// Route names key breakers, metric labels, log records and the admin page.
		for _, n := range []struct{ field, v string }{{".Model", r.Model}, {".Region", r.Region}, {".Name", r.Name}} {
			if n.v == "" {
				continue
			}
			if err := redact.CheckName(field+n.field, n.v); err != nil {
				var ce *ConfigError
				errors.As(err, &ce)
				return bad(ce.Field, n.v, ce.Problem)
			}
		}
		key := dependencymap.ModelKey(r.Model, r.Region)
		if j, dup := keys[key]; dup {
			return bad(field, key, fmt.Sprintf("same model and region as Routes[%d]", j))
		}
		keys[key] = i
		if r.Name == "" {
			cfg.Routes[i].Name = key
		}
		name := cfg.Routes[i].Name
		if name == Unavailable {
			return bad(field+".Name", name, "is reserved for calls no route served")
		}
		if j, dup := names[name]; dup {
			return bad(field+".Name", name, fmt.Sprintf("already the name of Routes[%d]", j))
		}
		names[name] = i
	}
	if cfg.Breakers == nil {
		m, err := dependencymap.New(dependencymap.Config{Clock: cfg.Clock})
		if err != nil {
			return fmt.Errorf("modelfailover: default breakers: %w", err)
		}
		cfg.Breakers = m
	}
	return nil
}
