package a2aguard

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"google.golang.org/adk/v2/agent"
	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// guard holds one remote agent's breaker and the state of its requests in flight. It
// is safe for concurrent use: each request has its own call, and the map is a
// sync.Map keyed by the request, which adk-go hands unchanged to the request
// callbacks and to the client.
type guard struct {
	dep, name string
	breaker   *breaker.Breaker
	clock     clock.Clock
	timeout   time.Duration
	reserve   float64
	mutating  bool
	cb        *callbacks.Callbacks
	path      *callpath.Path // the plugin's call path: holds, refusals, events

	calls sync.Map                      // *a2a.SendMessageRequest -> *call
	card  atomic.Pointer[a2a.AgentCard] // last card a provider gave
}

// call is one request admitted by the path.
type call struct {
	pc         callpath.Call
	invocation string

	mu        sync.Mutex
	started   bool // the client was asked to send it
	streaming bool
	done      bool // the outcome is known and reported
	out       outcome
}

// New builds the remote agent of cfg.Agent with its requests guarded as
// cfg.Dependency, and returns it where remoteagent.NewA2A's agent would go: a root's
// SubAgents (reached by transfer_to_agent) or agenttool.New (reached as a tool). See
// the package doc for what it answers while the remote fails. It contacts nobody.
func New(cfg Config) (agent.Agent, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	deps := cfg.Callbacks.Dependencies()
	if err := deps.AddTools(cfg.Dependency); err != nil {
		return nil, fmt.Errorf("a2aguard: Config.Dependency = %q: %w", cfg.Dependency, err)
	}
	if err := separateAgentTool(cfg); err != nil {
		return nil, err
	}
	b, _ := deps.Get(cfg.Dependency)
	g := &guard{
		dep: cfg.Dependency, name: cfg.Agent.Name, breaker: b, clock: deps.Clock(),
		timeout: max(cfg.Timeout, 0), reserve: cfg.TurnReserve,
		mutating: cfg.Callbacks.Mutating(cfg.Agent.Name), cb: cfg.Callbacks, path: cfg.Callbacks.Path(),
	}
	if g.clock == nil {
		g.clock = clock.System()
	}
	acfg := cfg.Agent
	acfg.BeforeRequestCallbacks = append([]remoteagent.BeforeA2ARequestCallback{g.before}, acfg.BeforeRequestCallbacks...)
	acfg.AfterRequestCallbacks = append([]remoteagent.AfterA2ARequestCallback{g.after}, acfg.AfterRequestCallbacks...)
	acfg.AfterAgentCallbacks = append([]agent.AfterAgentCallback{g.sweep}, acfg.AfterAgentCallbacks...)
	provider := acfg.ClientProvider
	if provider == nil {
		hc := &http.Client{}
		if cfg.HTTPClient != nil {
			cp := *cfg.HTTPClient
			hc = &cp
			if g.timeout > 0 && hc.Timeout >= g.timeout {
				hc.Timeout = 0 // ours, per request, bounds it
			}
		}
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		hc.Transport = &roundTripper{base: base}
		provider = remoteagent.NewA2AClientProvider(a2aclient.NewFactory(
			a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc)))
	}
	acfg.ClientProvider = func(ctx context.Context, card *a2a.AgentCard) (remoteagent.A2AClient, error) {
		c, err := provider(ctx, card)
		if err != nil {
			return nil, err
		}
		return &client{inner: c, g: g}, nil
	}
	if p := acfg.AgentCardProvider; p != nil && acfg.AgentCard == nil {
		acfg.AgentCardProvider = g.cardProvider(p)
		acfg.BeforeAgentCallbacks = append([]agent.BeforeAgentCallback{g.beforeCard}, acfg.BeforeAgentCallbacks...)
	}
	a, err := remoteagent.NewA2A(acfg)
	if err != nil {
		return nil, fmt.Errorf("a2aguard: remoteagent: %w", err)
	}
	return a, nil
}

// MustNew is New that panics on error.
func MustNew(cfg Config) agent.Agent {
	a, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return a
}

// separateAgentTool keeps an AgentTool of the remote agent off the remote's breaker.
// The plugin guards agenttool.New(remote) as a tool named after the agent; if that
// name led to cfg.Dependency, the outer call would take the half-open probe, the
// request inside it would be refused (the probe is out), the sub-agent would answer
// in words, and the probe would count as a success: three such probes close the
// breaker on a dead remote. The request is what this package guards, so the outer
// call gets a key of its own (cfg.Dependency + "-agenttool"). A configuration that
// lists the agent's name under cfg.Dependency itself is refused.
func separateAgentTool(cfg Config) error {
	deps := cfg.Callbacks.Dependencies()
	if slices.Contains(deps.Tools(cfg.Dependency), cfg.Agent.Name) {
		return fmt.Errorf("a2aguard: Config.Agent.Name = %q is listed as a tool of dependency %q in the dependency map: "+
			"an AgentTool of it would take that breaker's half-open probe and its own request would be refused, "+
			"closing the breaker on a dead remote; remove it from the dependency's tools (a2aguard guards the requests)",
			cfg.Agent.Name, cfg.Dependency)
	}
	if key, ok := deps.DependencyOf(cfg.Agent.Name); ok && key == cfg.Dependency {
		if err := deps.AddTools(cfg.Dependency+"-agenttool", cfg.Agent.Name); err != nil {
			return fmt.Errorf("a2aguard: Config.Agent.Name = %q: %w", cfg.Agent.Name, err)
		}
	}
	return nil
}

// before admits a request through the call path, or answers it without sending.
func (g *guard) before(ctx agent.Context, req *a2a.SendMessageRequest) (*session.Event, error) {
	c := &call{invocation: ctx.InvocationID()}
	c.pc = callpath.Call{Dependency: g.dep, Tool: g.name, InvocationID: c.invocation, Breaker: g.breaker}
	if r, ok := g.path.Admit(ctx, &c.pc); !ok {
		g.path.Refuse(ctx, &c.pc, r)
		return g.refusal(ctx, r.Class, r.RetryAfter), nil
	}
	g.calls.Store(req, c)
	g.markRequest(ctx, req)
	return nil, nil
}

// after passes the remote's events on, and replaces the event that carries a failure
// (adk-go's error event with the transport's text, a failed task) with one in
// agentbreaker's words.
func (g *guard) after(ctx agent.Context, req *a2a.SendMessageRequest, resp *session.Event, _ error) (*session.Event, error) {
	if own(resp) {
		return nil, nil
	}
	v, ok := g.calls.Load(req)
	if !ok {
		return nil, nil
	}
	c := v.(*call)
	c.mu.Lock()
	started, done, streaming, out := c.started, c.done, c.streaming, c.out
	if !started {
		// A later before-request callback answered, or there was nothing to send:
		// the remote never saw it.
		c.done = true
		g.path.Release(&c.pc)
	}
	c.mu.Unlock()
	if !started || !streaming {
		g.calls.Delete(req)
	}
	if !done || resp == nil {
		return nil, nil
	}
	switch {
	case out.inner:
		return nil, nil // the remote's own words for its inner failure reach the caller
	case out.words != "":
		return g.answer(ctx, out), nil
	case out.cls.Outcome == classify.Succeeded:
		return nil, nil
	}
	return g.failure(ctx, out.cls), nil
}

// sweep releases the calls of an invocation whose end no callback saw (an event
// adk-go's conversion dropped). It runs after the remote agent's run.
func (g *guard) sweep(ctx agent.Context) (*genai.Content, error) {
	id := ctx.InvocationID()
	g.calls.Range(func(k, v any) bool {
		c := v.(*call)
		if c.invocation != id {
			return true
		}
		c.mu.Lock()
		if !c.done {
			c.done = true
			g.path.Release(&c.pc)
		}
		c.mu.Unlock()
		g.calls.Delete(k)
		return true
	})
	return nil, nil
}

// finish classifies a request that ended and settles it on the path, before the
// event that ends it reaches the after-callback. The remote's text is never read.
func (g *guard) finish(parent, own context.Context, c *call, rec *record, last a2a.Event, err error) {
	out := judge(parent, own, rec, last, err, g.clock.Now())
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return
	}
	c.done, c.out = true, out
	c.mu.Unlock()
	// Only the one that set done reports: the permit is this goroutine's now, and the
	// sink's hooks run with no lock held.
	g.path.Settle(parent, &c.pc, out.cls, "")
	if out.inner {
		g.cb.NoteInnerFailure(parent, callbacks.InnerFailure{Dependency: g.dep, Class: out.cls.Class, Retryable: out.cls.Retryable})
	}
}

// abandon releases a call whose stream the caller stopped reading: nothing is known.
func (g *guard) abandon(c *call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.done = true
		g.path.Release(&c.pc)
	}
}

// bound gives a request its deadline: Timeout, and at most the caller's deadline less
// the reserve. The a2a client's own three-minute timeout never applies: the guard's
// HTTP client has none of its own.
func (g *guard) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	d := g.timeout
	if dl, ok := ctx.Deadline(); ok && g.reserve > 0 {
		left := time.Until(dl)
		if lim := left - time.Duration(float64(left)*g.reserve); d <= 0 || lim < d {
			d = max(lim, time.Nanosecond)
		}
	}
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// cardProvider keeps the last agent card a provider gave, and while the breaker is
// not closed offers it without fetching: the request decides, and the card of a
// remote that is down would only fail too, outside any callback. With no card yet,
// the fetch goes through the breaker: refused, it is not attempted; failed, it counts
// (the remote cannot be reached); a card fetched says nothing about the requests and
// is not counted. adk-go ends such a run with an error event of its own, whose text
// here names only the agent and the class.
func (g *guard) cardProvider(p remoteagent.AgentCardProvider) remoteagent.AgentCardProvider {
	return func(ctx context.Context) (*a2a.AgentCard, error) {
		last := g.card.Load()
		if last != nil && g.breaker.State() != breaker.Closed {
			return last, nil
		}
		pc := callpath.Call{Dependency: g.dep, Tool: g.name, Breaker: g.breaker}
		if last == nil {
			if r, ok := g.path.Admit(ctx, &pc); !ok {
				return nil, fmt.Errorf("%s is temporarily unavailable: %s", payloads.CleanName(g.dep), payloads.Phrase(r.Class))
			}
		}
		card, err := p(ctx)
		if err != nil {
			if last != nil {
				return last, nil // the request meets the breaker
			}
			cls := classify.Error(ctx, err)
			if ctx.Err() == nil && cls.Verdict != classify.Counts {
				cls = classify.ForClass(classify.ClassTransport) // the card is not there: the remote is unreachable
			}
			g.path.Settle(ctx, &pc, cls, "")
			return nil, fmt.Errorf("the agent card of %s could not be fetched: %s", payloads.CleanName(g.name), payloads.Phrase(cls.Class))
		}
		g.path.Release(&pc) // a card says nothing about the requests
		g.card.Store(card)
		return card, nil
	}
}

// beforeCard answers, in words, a run that would have to fetch the agent card of a
// remote whose breaker is open: adk-go resolves the card before any request
// callback, and would end the run with an error event.
func (g *guard) beforeCard(ctx agent.Context) (*genai.Content, error) {
	if g.card.Load() != nil {
		return nil, nil
	}
	if st := g.breaker.State(); st != breaker.Open && st != breaker.ForcedOpen {
		return nil, nil // half-open: the card's fetch may be the probe
	}
	ev := g.refusal(ctx, g.path.LastClass(g.dep), g.breaker.RetryAfter())
	return ev.Content, nil
}
