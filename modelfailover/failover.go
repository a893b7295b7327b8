package modelfailover

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
)

// Failover routes model calls across an ordered list of model endpoints, each
// behind its own circuit breaker. It is a model.LLM (give it to an llmagent as its
// Model) and it also offers model callbacks for agents that keep their own model;
// both share its breakers and its record of which route is serving.
//
// # Per-call fallbacks and failovers
//
// Each call tries the routes in order and is answered by the first that admits it
// and answers. A call answered by a route other than the primary is a fallback
// call: it is counted ([Call.FallbackFrom], the fallback share in [Stats]) but not
// announced, because a flaky primary whose breaker stays closed still serves.
//
// Each attempt runs the call path every hop shares: a route whose endpoint stated
// a delay (a 429's Retry-After or RetryInfo, bounded by its policy's
// MaxRetryAfter) is held, passed over without a request until the delay has
// passed; then its breaker decides.
//
// The serving route follows the breakers and the holds, never the order in which
// calls finish: it is the first route, in order, whose breaker admits calls
// (closed or forced closed) and that no stated delay holds, or Unavailable when
// none does. A breaker that is open, half-open (its probe is out) or forced open
// does not serve. A failover is a change of the
// serving route; it is announced exactly once, with one warning log record, one
// call of Config.OnFailover and one [Observer.ObserveFailover], in the order the
// changes happened. The serving route is compared with the breakers after every
// call's outcome is reported and whenever a call finds every route refusing, so a
// change is announced by the call that caused it (the one whose failure opened a
// breaker, or whose probe closed it); a breaker changed by an operator is noticed
// on the next call. Causes: the failure class that opened the serving route's
// breaker or that stated its delay (breaker_open when no failure seen here
// explains it),
// probe_succeeded when this Failover's probe closed a breaker ahead, recovered
// when a breaker ahead admits calls again otherwise, all_routes_open for
// Unavailable.
//
// # Time bounds
//
// Config.AttemptTimeout bounds the wait for an attempt's first response (the
// whole answer of a call that is not streamed, the first chunk of a stream),
// Config.ChunkTimeout the gap between two chunks of a stream, and
// Config.CallTimeout the whole attempt, streamed or not. A bound that runs out
// ends the attempt as the route's failure (class timeout): before anything reached
// the caller the call fails over, afterwards the error is returned. A healthy
// stream that keeps sending chunks is never cut by AttemptTimeout or
// ChunkTimeout. The time the caller spends on a chunk is not counted as a gap.
// In the callbacks path the agent's own model call is bounded by [NewTransport]
// (AttemptTimeout, ChunkTimeout) and by the request's HTTPOptions.Timeout
// (CallTimeout); the error then reaches the caller as the model returned it.
//
// A Failover is safe for concurrent use: adk runs many sessions, and parallel
// agents, on separate goroutines. Hooks and the Observer are called outside its
// locks.
type Failover struct {
	routes     []*route
	cls        *classify.Classifier
	clk        clock.Clock
	log        *slog.Logger
	onFailover func(Event)
	obs        Observer
	// added are the observers attached after New (internal/attach, for the
	// telemetry's Wire), called after obs.
	added   atomic.Pointer[[]Observer]
	bounds  bounds
	message string

	serving atomic.Int64 // index of the serving route; -1 = Unavailable. Written under mu.
	share   *shareWindow
	pending pendingTable
	path    *callpath.Path // the routes' holds and breakers
	refused atomic.Uint64  // SDK re-sends refused by a transport (Stats.RefusedRetries)

	mu         sync.Mutex // guards the fields below
	failovers  map[[2]string]uint64
	queue      []announcement // changes not yet announced, in order
	delivering bool           // a goroutine is announcing the queue
}

// route is a configured Route with its breaker.
type route struct {
	Route
	idx      int
	key      string // the endpoint's dependency key, model@region
	b        *breaker.Breaker
	lim      *adaptivelimit.Limiter   // the endpoint's adaptive limit, or nil
	lastFail atomic.Pointer[failInfo] // the last failure reported to b by this Failover
	untapped atomic.Bool              // warned once: its model's client has no NewTransport
}

func (r *route) endpoint() Endpoint {
	return Endpoint{Name: r.Name, Model: r.Model, Region: r.Region, Primary: r.idx == 0}
}

// New returns a Failover, or an error naming the first invalid field of cfg.
func New(cfg Config) (*Failover, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	f := &Failover{
		cls:        cfg.Classifier,
		clk:        cfg.Clock,
		log:        cfg.Logger,
		onFailover: cfg.OnFailover,
		obs:        cfg.Observer,
		bounds:     bounds{first: cfg.AttemptTimeout, gap: cfg.ChunkTimeout, whole: cfg.CallTimeout, clk: cfg.Clock},
		message:    cfg.UnavailableMessage,
		share:      newShareWindow(cfg.ShareWindow, cfg.Clock.Now()),
		failovers:  map[[2]string]uint64{},
	}
	f.pending.init(cfg.PendingTTL)
	f.path = callpath.New(callpath.Nanos(cfg.Clock), shadowSink{f})
	for i, r := range cfg.Routes {
		b, err := cfg.Breakers.ForModel(r.Model, r.Region)
		if err != nil {
			return nil, fmt.Errorf("modelfailover: Routes[%d] (%s): %w", i, r.Name, err)
		}
		key := dependencymap.ModelKey(r.Model, r.Region)
		f.routes = append(f.routes, &route{Route: r, idx: i, key: key, b: b, lim: cfg.Breakers.Limiter(key)})
	}
	return f, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Failover {
	f, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return f
}

// Name returns the primary route's model name; adk puts it on each request, and
// each attempt replaces it with its own route's model.
func (f *Failover) Name() string { return f.routes[0].Model }

// GetGoogleLLMVariant reports the primary model's backend (Gemini API or Vertex
// AI), which adk reads to adapt requests; unknown when the primary does not say.
func (f *Failover) GetGoogleLLMVariant() genai.Backend {
	if v, ok := f.routes[0].LLM.(interface{ GetGoogleLLMVariant() genai.Backend }); ok {
		return v.GetGoogleLLMVariant()
	}
	return genai.BackendUnspecified
}

// RouteInfo describes a configured route and its breaker.
type RouteInfo struct {
	Endpoint
	Breaker *breaker.Breaker
}

// Routes returns the routes in order with their breakers.
func (f *Failover) Routes() []RouteInfo {
	out := make([]RouteInfo, len(f.routes))
	for i, r := range f.routes {
		out[i] = RouteInfo{Endpoint: r.endpoint(), Breaker: r.b}
	}
	return out
}

// GenerateContent calls the first route whose breaker admits the call, and fails
// over to the next while nothing has been passed to the caller yet. A failure
// after streamed output is recorded and returned, never replaced by a second
// answer. When every breaker refuses, it answers with the unavailable message and
// calls no model.
func (f *Failover) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if f.routes[0].LLM == nil {
			yield(nil, ErrNoPrimaryModel)
			return
		}
		t := &turn{}
		for _, r := range f.routes {
			c, ok := f.admit(ctx, r, t)
			if !ok {
				continue
			}
			if f.attemptWithin(ctx, r, c, req, stream, t, yield) {
				return
			}
		}
		f.exhausted(ctx, t, yield)
	}
}

// exhausted ends a call that no route answered: with the failures when some
// route was tried, else with the unavailable answer.
func (f *Failover) exhausted(ctx context.Context, t *turn, yield func(*model.LLMResponse, error) bool) {
	if len(t.attempts) > 0 {
		err := t.routesError()
		f.finish(ctx, t, t.lastRoute, ServedFailed, t.attempts[len(t.attempts)-1].Class, false)
		yield(nil, err)
		return
	}
	resp := f.unavailable()
	f.finish(ctx, t, nil, ServedUnavailable, classify.ClassBreakerOpen, false)
	yield(resp, nil)
}
