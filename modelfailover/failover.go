package modelfailover

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
)

// Failover routes model calls across an ordered list of model endpoints, each
// behind its own circuit breaker. It is a model.LLM (give it to an llmagent as its
// Model) and it also offers model callbacks for agents that keep their own model;
// both share its breakers and its record of which route is serving.
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
	timeout    time.Duration
	message    string

	serving atomic.Int64 // index of the route that served the last call; -1 = Unavailable
	share   *shareWindow
	pending pendingTable

	mu        sync.Mutex // guards failovers
	failovers map[[2]string]uint64
}

// route is a configured Route with its breaker.
type route struct {
	Route
	idx int
	b   *breaker.Breaker
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
		timeout:    cfg.AttemptTimeout,
		message:    cfg.UnavailableMessage,
		share:      newShareWindow(cfg.ShareWindow, cfg.Clock.Now()),
		failovers:  map[[2]string]uint64{},
	}
	f.pending.init(cfg.PendingTTL)
	for i, r := range cfg.Routes {
		b, err := cfg.Breakers.ForModel(r.Model, r.Region)
		if err != nil {
			return nil, fmt.Errorf("modelfailover: Routes[%d] (%s): %w", i, r.Name, err)
		}
		f.routes = append(f.routes, &route{Route: r, idx: i, b: b})
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
			p, err := r.b.Allow()
			if err != nil {
				t.skip(r, err)
				continue
			}
			if f.attempt(ctx, r, &p, req, stream, t, yield) {
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
