package callbacks

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// ErrNoDependencies is returned by New when Config.Dependencies is nil.
var ErrNoDependencies = errors.New("callbacks: Config.Dependencies is nil: required")

// ModelCallbacks are model callbacks from another package (model failover) to bundle
// into the same plugin and the same agent instrumentation, after agentbreaker's own.
// Each is optional.
type ModelCallbacks struct {
	Before  llmagent.BeforeModelCallback
	After   llmagent.AfterModelCallback
	OnError llmagent.OnModelErrorCallback
}

// Config configures [Callbacks]. The zero value of every field but Dependencies means
// its default.
type Config struct {
	// Name is the plugin's name; the dispatch marker plugin is Name + "-dispatch".
	// Defaults to "agentbreaker".
	Name string
	// Dependencies maps tools to their breakers. Required.
	Dependencies *dependencymap.Map

	// Classifier classifies every outcome. Defaults to the classify package's rules.
	Classifier *classify.Classifier
	// Classifiers overrides Classifier for some dependencies, by dependency key.
	// Defaults to none.
	Classifiers map[string]*classify.Classifier

	// Cache, when set, stores last-good results of the tools it lists and offers them
	// in open-breaker payloads. Defaults to none.
	Cache *payloads.Cache
	// Alternatives names, per tool, other tools the model may use when it is
	// unavailable. Defaults to none.
	Alternatives map[string][]string
	// Fallback, when set, returns a partial result for a short-circuited call, or nil.
	// It runs on the call's goroutine with no lock held; a panic in it is recovered.
	// Defaults to none.
	Fallback func(ctx agent.Context, tool string, args map[string]any) any
	// MutatingTools are tools with side effects. When one of their calls fails with
	// an UNKNOWN outcome that counts (a timeout after sending, a reset, most 5xx), the
	// model gets an outcome-unknown payload telling it not to repeat the action,
	// instead of the raw error. Defaults to none.
	MutatingTools []string

	// Bulkheads caps concurrent calls per dependency key. Defaults to none.
	Bulkheads map[string]int
	// DefaultBulkhead caps concurrent calls to every dependency not in Bulkheads.
	// Defaults to 0: unlimited.
	DefaultBulkhead int
	// SustainedRejections and SustainedWindow decide when bulkhead rejections are
	// sustained (see package bulkhead). Default to 10 within one minute.
	SustainedRejections int
	SustainedWindow     time.Duration

	// LoopGuard configures the loop guard. Zero fields take loopguard's defaults.
	LoopGuard loopguard.Config
	// Docstring is the sentence added to guarded tools' descriptions before each model
	// call. Defaults to docstrings.Sentence.
	Docstring string
	// DisableDocstrings leaves tool descriptions alone. Defaults to false.
	DisableDocstrings bool

	// ExemptTools are never guarded, in addition to the dependency map's own exempt
	// tools and (unless GuardBuiltinTools) adk-go's built-in tools. Defaults to none.
	ExemptTools []string
	// GuardBuiltinTools puts adk-go's built-in tools (transfer_to_agent, exit_loop,
	// set_model_response, ...) behind breakers too. Defaults to false: they call no
	// dependency, and an agent that cannot transfer is worse off, not safer.
	GuardBuiltinTools bool
	// TrackDispatch says that DispatchPlugin is registered as the last plugin. Calls
	// it did not see were stopped by a plugin registered between the two and never
	// reached the dependency; their permits are released without measuring them.
	// Defaults to false: without the marker, whatever such a plugin returns is
	// classified as if the tool had returned it.
	TrackDispatch bool

	// Model holds model callbacks to bundle (model failover's). Defaults to none.
	Model ModelCallbacks

	// Logger receives structured records with stable keys (dependency, tool,
	// request_id, outcome, error_class, elapsed_ms, breaker_state, policy_version).
	// Raw upstream error text appears only here, as upstream_error, cut at 512 bytes.
	// Defaults to discarding everything.
	Logger *slog.Logger
	// OnEvent receives every event (see EventKind), on the goroutine of the call that
	// caused it and with no lock held; a panic in it is recovered and logged. Keep it
	// quick. Defaults to none.
	OnEvent func(Event)
	// Observer receives the calls for metrics and traces; pass a *telemetry.Telemetry.
	// It gets, with the call's adk-go tool context (which carries the "execute_tool"
	// span and the call's IDs): ShortCircuit for each call an open breaker answered,
	// BulkheadRejected for each call a full bulkhead refused, and CallOutcome exactly
	// once for each admitted call that reached its tool (or may have: a call released
	// without its after-callback is reported as UNKNOWN), never for a call another
	// plugin stopped before the tool or for an agentbreaker payload. Its BreakerEvent
	// and RetryBudgetExhausted are not called from here: give BreakerEvent to
	// dependencymap.Config.OnStateChange. It runs on the call's goroutine with no lock
	// held; a panic in it is recovered and logged. Defaults to none (nil), which costs
	// nothing.
	Observer observe.Calls
	// Clock tells the time for elapsed times, events and idle expiry. Defaults to a
	// coarse (about 1ms) monotonic reading of the system clock.
	Clock clock.Clock
	// IdleInvocationTimeout frees the state of an invocation that has seen no callback
	// for this long. The plugin frees state when each run ends, and AgentTool when the
	// sub-agent's run ends; this catches agents instrumented by hand, which have no
	// end-of-run hook. From 1m to 24h. Defaults to 30m.
	IdleInvocationTimeout time.Duration
}

// withDefaults fills in defaults and checks every field.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Dependencies == nil {
		return cfg, ErrNoDependencies
	}
	if cfg.Name == "" {
		cfg.Name = "agentbreaker"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.IdleInvocationTimeout == 0 {
		cfg.IdleInvocationTimeout = 30 * time.Minute
	}
	if cfg.IdleInvocationTimeout < time.Minute || cfg.IdleInvocationTimeout > 24*time.Hour {
		return cfg, fmt.Errorf("callbacks: Config.IdleInvocationTimeout = %s: must be between 1m and 24h", cfg.IdleInvocationTimeout)
	}
	for key, c := range cfg.Classifiers {
		if c == nil {
			return cfg, fmt.Errorf("callbacks: Config.Classifiers[%q] = nil: remove the entry or give a classifier", key)
		}
	}
	for tool, alts := range cfg.Alternatives {
		for i, a := range alts {
			if a == "" {
				return cfg, fmt.Errorf(`callbacks: Config.Alternatives[%q][%d] = "": tool name is empty`, tool, i)
			}
		}
	}
	for i, t := range cfg.MutatingTools {
		if t == "" {
			return cfg, fmt.Errorf(`callbacks: Config.MutatingTools[%d] = "": tool name is empty`, i)
		}
	}
	for i, t := range cfg.ExemptTools {
		if t == "" {
			return cfg, fmt.Errorf(`callbacks: Config.ExemptTools[%d] = "": tool name is empty`, i)
		}
	}
	if cfg.DefaultBulkhead < 0 {
		return cfg, fmt.Errorf("callbacks: Config.DefaultBulkhead = %d: must be 0 (unlimited) or positive", cfg.DefaultBulkhead)
	}
	if !cfg.DisableDocstrings {
		if cfg.Docstring == "" {
			cfg.Docstring = defaultDocstring
		}
		if strings.TrimSpace(cfg.Docstring) == "" {
			return cfg, errors.New("callbacks: Config.Docstring is blank: leave it empty for the default or set DisableDocstrings")
		}
	}
	return cfg, nil
}
