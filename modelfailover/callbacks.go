package modelfailover

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
)

// The callbacks serve agents that keep their own model: Routes[0] and every route
// without an LLM are served by it (BeforeModel puts the route's model name on the
// request); a route with an LLM of its own answers from inside the callback, whole
// rather than streamed. Their signatures are exactly llmagent.BeforeModelCallback,
// llmagent.AfterModelCallback and llmagent.OnModelErrorCallback.
//
// Register all three, and ahead of other model callbacks: adk skips the rest of a
// chain once one callback answers, so a callback ahead of these that answers would
// hide the outcome from them. A call whose outcome never arrives is released after
// Config.PendingTTL.

// pendingCall is a call admitted by BeforeModel and sent to the agent's own model,
// waiting for its outcome. Whoever takes it out of the table owns it.
type pendingCall struct {
	ctx     context.Context // the call's context, kept for reporting a call abandoned
	r       *route
	call    *callpath.Call
	probe   bool
	rec     *recorder
	tag     string
	t       *turn
	since   time.Time
	yielded atomic.Bool // a partial response went to the caller
}

// pendingTable holds pending calls by invocation, branch and agent: adk makes one
// model call at a time for each.
type pendingTable struct {
	mu        sync.Mutex
	ttl       time.Duration
	calls     map[string]*pendingCall
	lastSweep time.Time
}

func (pt *pendingTable) init(ttl time.Duration) {
	pt.ttl = ttl
	pt.calls = map[string]*pendingCall{}
}

// put stores pc and returns the calls that must be released: one left under the
// same key, and, now and then, those older than the TTL.
func (pt *pendingTable) put(key string, pc *pendingCall, now time.Time) []*pendingCall {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	var stale []*pendingCall
	if old := pt.calls[key]; old != nil {
		stale = append(stale, old)
	}
	pt.calls[key] = pc
	if now.Sub(pt.lastSweep) >= pt.ttl/4 {
		pt.lastSweep = now
		for k, c := range pt.calls {
			if now.Sub(c.since) >= pt.ttl {
				stale = append(stale, c)
				delete(pt.calls, k)
			}
		}
	}
	return stale
}

func (pt *pendingTable) peek(key string) *pendingCall {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.calls[key]
}

// takeIf removes pc if it is still the call pending under key.
func (pt *pendingTable) takeIf(key string, pc *pendingCall) bool {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.calls[key] != pc {
		return false
	}
	delete(pt.calls, key)
	return true
}

func (pt *pendingTable) take(key string) *pendingCall {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pc := pt.calls[key]
	delete(pt.calls, key)
	return pc
}

// Pending returns how many calls the callbacks admitted and still wait on.
func (f *Failover) Pending() int {
	f.pending.mu.Lock()
	defer f.pending.mu.Unlock()
	return len(f.pending.calls)
}

func callKey(ctx agent.Context) string {
	return ctx.InvocationID() + "\x00" + ctx.Branch() + "\x00" + ctx.AgentName()
}

// release frees the permits of calls whose outcome never came, and reports each
// to the Observer as abandoned: one ObserveCall per model call, whatever happened.
func (f *Failover) release(calls []*pendingCall) {
	for _, pc := range calls {
		untag(pc.tag)
		f.path.Release(pc.call)
		f.finish(pc.ctx, pc.t, pc.r, ServedAbandoned, classify.ClassCanceled, pc.probe)
	}
}

// BeforeModel picks the route for a model call. It lets the agent's own model make
// the call (returning nil) when the chosen route is the primary or has no LLM,
// answers from a fallback's own LLM, or gives the unavailable answer when every
// breaker is open.
func (f *Failover) BeforeModel(ctx agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
	key := callKey(ctx)
	if old := f.pending.take(key); old != nil {
		f.release([]*pendingCall{old}) // a call under this key whose outcome never came
	}
	t := &turn{}
	for _, r := range f.routes {
		c, ok := f.admit(ctx, r, t)
		if !ok {
			continue
		}
		if r.idx == 0 || r.LLM == nil {
			if !f.limit(ctx, r, c, t) {
				continue // at its adaptive limit: passed over (adaptive.go)
			}
			f.send(ctx, key, r, c, req, t)
			return nil, nil
		}
		if resp, err, done := f.inline(ctx, r, c, req, t); done {
			return resp, err
		}
	}
	if len(t.attempts) > 0 {
		f.finish(ctx, t, t.lastRoute, ServedFailed, t.attempts[len(t.attempts)-1].Class, false)
		return nil, t.routesError()
	}
	resp := f.unavailable()
	f.finish(ctx, t, nil, ServedUnavailable, classify.ClassBreakerOpen, false)
	return resp, nil
}

// send sends the call to the agent's own model on route r. The request's config
// is copied before it is changed: adk builds a fresh request per call, but a
// callback ahead of this one may have put shared values in it.
func (f *Failover) send(ctx agent.Context, key string, r *route, c *callpath.Call, req *model.LLMRequest, t *turn) {
	t.tried++
	req.Model = r.Model
	// The transport (NewTransport) enforces the first-response and chunk-gap
	// bounds on this call, which the callbacks cannot do themselves.
	rec := &recorder{f: f, bounds: bounds{first: f.bounds.first, gap: f.bounds.gap, whole: f.bounds.whole, clk: f.bounds.clk}}
	id := f.tag(rec)
	// genai's HTTPOptions.Timeout bounds the whole HTTP exchange, a stream
	// included, and a callback cannot tell whether the call streams (adk-go's
	// callback context has no RunConfig). So only CallTimeout, which bounds the
	// whole call by definition, can be put on the agent's own model call.
	timeout := f.bounds.whole
	{
		cfg := genai.GenerateContentConfig{}
		if req.Config != nil {
			cfg = *req.Config
		}
		h := genai.HTTPOptions{}
		if cfg.HTTPOptions != nil {
			h = *cfg.HTTPOptions
		}
		if id != "" {
			h.Headers = h.Headers.Clone()
			if h.Headers == nil {
				h.Headers = http.Header{}
			}
			h.Headers.Set(attemptHeader, id)
		}
		if timeout > 0 && h.Timeout == nil {
			h.Timeout = &timeout
		}
		h = pinGenaiRetries(h) // the failover owns retries (sdkretry.go)
		cfg.HTTPOptions = &h
		req.Config = &cfg
	}
	pc := &pendingCall{ctx: ctx, r: r, call: c, probe: c.IsProbe(), rec: rec, tag: id, t: t, since: f.clk.Now()}
	rec.settleEmpty = func() { f.settleFiltered(key, pc) }
	f.release(f.pending.put(key, pc, pc.since))
}

// settleFiltered ends a call of the agent's own model whose stream a content
// filter stopped before any output: openaimodel then yields nothing, so neither
// AfterModel nor OnModelError runs. The endpoint worked (a healthy safety_block).
func (f *Failover) settleFiltered(key string, pc *pendingCall) {
	if !f.pending.takeIf(key, pc) {
		return // a callback already has it
	}
	f.untag(pc.ctx, pc)
	c := filtered(classify.ForClass(classify.ClassUnclassified), pc.rec)
	f.report(pc.ctx, pc.r, pc.call, c)
	f.finish(pc.ctx, pc.t, pc.r, servedBy(pc.r), c.Class, pc.probe)
}

// inline calls a fallback's own LLM from inside a callback, not streamed.
func (f *Failover) inline(ctx agent.Context, r *route, p *callpath.Call, req *model.LLMRequest, t *turn) (*model.LLMResponse, error, bool) {
	var resp *model.LLMResponse
	var err error
	done := f.attemptWithin(ctx, r, p, req, false, t, func(rs *model.LLMResponse, e error) bool {
		resp, err = rs, e
		return true
	})
	return resp, err, done
}

// AfterModel records the outcome of a call the agent's own model answered: once,
// on the final response, as a success for the route (a safety block included).
// It marks each response with the route and never replaces it.
func (f *Failover) AfterModel(ctx agent.Context, resp *model.LLMResponse, respErr error) (*model.LLMResponse, error) {
	key := callKey(ctx)
	if respErr == nil && resp != nil && resp.Partial {
		if pc := f.pending.peek(key); pc != nil {
			pc.yielded.Store(true)
			mark(resp, pc.r)
		}
		return nil, nil
	}
	pc := f.pending.take(key)
	if pc == nil {
		return nil, nil
	}
	defer f.untag(ctx, pc)
	switch {
	case respErr != nil:
		c := f.classify(ctx, pc.rec.attemptContext(), respErr, pc.rec)
		f.report(ctx, pc.r, pc.call, c)
		f.finish(ctx, pc.t, pc.r, failedOrAbandoned(ctx), c.Class, pc.probe)
	case resp == nil:
		f.path.Release(pc.call)
		f.finish(ctx, pc.t, pc.r, ServedAbandoned, classify.ClassCanceled, pc.probe)
	default:
		c := filtered(responseClass(resp), pc.rec)
		f.report(ctx, pc.r, pc.call, c)
		s := servedBy(pc.r)
		if c.Verdict == classify.Counts {
			s = ServedFailed // an answer with nothing in it: adk-go passes it on as it is
		}
		f.finish(ctx, pc.t, pc.r, s, c.Class, pc.probe)
		mark(resp, pc.r)
	}
	return nil, nil
}

// OnModelError records a failed call of the agent's own model and, when nothing
// was streamed yet and the failure is the route's fault, answers from the next
// fallback that has an LLM of its own. Otherwise it returns nil and the error
// goes on to later callbacks and to the caller.
func (f *Failover) OnModelError(ctx agent.Context, req *model.LLMRequest, callErr error) (*model.LLMResponse, error) {
	pc := f.pending.take(callKey(ctx))
	if pc == nil {
		return nil, nil
	}
	defer f.untag(ctx, pc)
	c := f.classify(ctx, pc.rec.attemptContext(), callErr, pc.rec)
	f.report(ctx, pc.r, pc.call, c)
	t := pc.t
	if pc.r.b.Shadow() && !pc.yielded.Load() && c.Verdict == classify.Counts {
		f.wouldFailOver(ctx, pc.r, c.Class)
	}
	if pc.yielded.Load() || c.Verdict != classify.Counts || pc.r.b.Shadow() {
		f.finish(ctx, t, pc.r, failedOrAbandoned(ctx), c.Class, pc.probe)
		return nil, nil
	}
	t.fail(pc.r, c, callErr)
	for _, r := range f.routes[pc.r.idx+1:] {
		if r.LLM == nil {
			// Served by the agent's model, whose call just failed.
			t.notes = append(t.notes, note{idx: r.idx, cause: Cause(c.Class)})
			continue
		}
		call, ok := f.admit(ctx, r, t)
		if !ok {
			continue
		}
		if resp, err, done := f.inline(ctx, r, call, req, t); done {
			return resp, err
		}
	}
	last := t.attempts[len(t.attempts)-1]
	f.finish(ctx, t, t.lastRoute, ServedFailed, last.Class, false)
	return nil, nil
}
