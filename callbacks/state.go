package callbacks

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/bulkhead"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// layer says which installation of the callbacks admitted a call: the runner plugin or
// the agent-level callbacks. When both are installed, the first to see a call owns it
// and the other stands aside.
type layer uint8

const (
	pluginLayer layer = iota + 1
	agentLayer
)

// callKey pairs a call's before- and after-callbacks. adk-go creates one tool context
// per call and passes the same value to every callback of that call, while the
// model-supplied function call ID can repeat within one response; the context's
// identity tells two such calls apart.
type callKey struct {
	ctx uintptr
	id  string
}

func keyOf(ctx agent.Context) callKey {
	var p uintptr
	if v := reflect.ValueOf(ctx); v.Kind() == reflect.Pointer {
		p = v.Pointer()
	}
	// A context that is not a pointer cannot be told apart from another call with the
	// same ID; the ID alone is the best left.
	return callKey{ctx: p, id: ctx.FunctionCallID()}
}

// call is one admitted tool call, from the before-callback until its outcome is
// reported. Whoever removes it from its invocation's map owns reporting it, so the
// permit and the bulkhead slot are released exactly once.
type call struct {
	owner   layer
	ctx     agent.Context // held so the context (and so the key) stays unique while the call lives
	tool    string
	dep     string
	breaker *breaker.Breaker
	permit  breaker.Permit
	bulk    *bulkhead.Bulkhead
	limit   adaptivelimit.Permit // the dependency's adaptive limit's, when it has one (zero otherwise)
	start   int64                // c.nanos() at admission

	attempt *retry.Attempt // the retry attempt this call is, when Config.SideEffects.Retry is set

	throttle *throttle.Throttle // the dependency's throttle, when it has one and the breaker was closed

	tracked bool // a dispatch marker runs for this call
	// transparent marks an agent tool's call admitted on a dependency its own inner
	// calls guard (hops.go): it holds no probe, no bulkhead slot, and its outcome is
	// never reported to that breaker.
	transparent bool
	// inner is the first failure of the nested runs' calls, set by the agent tool
	// when its call returns, under the invocation's lock (hops.go).
	inner      *innerFailure
	dispatched atomic.Bool // the marker saw the call reach the tool

	// Set by the on-error callback, under the invocation's lock.
	errSeen bool
	errSent bool // the error came from the tool, not from a callback that refused the call
	errCls  classify.Classification
	errText string
	err     error
}

// invocation is the per-invocation state: the loop guard's counters and the calls in
// flight. It is freed when the run ends.
type invocation struct {
	id       string
	draw     uint64 // the throttles' random draw for every call of the invocation (see shed.go)
	tracker  *loopguard.Tracker
	lastUsed atomic.Int64 // c.nanos()

	// The model request and response agentbreaker last handled, so that a plugin and
	// agent-level callbacks installed together act once per model call.
	lastReq  atomic.Pointer[model.LLMRequest]
	lastResp atomic.Pointer[model.LLMResponse]
	lastErr  atomic.Pointer[model.LLMRequest]

	mu      sync.Mutex
	calls   callSet
	callBuf [4]callEntry     // calls' first backing array, allocated with the invocation
	unknown map[callKey]bool // calls to invented tool names already reported
	freed   bool

	node invNode // its entry in Callbacks.invs, allocated with it
	// scope is the agent-tool call whose nested runner runs this invocation, or nil
	// (hops.go); read from the context once, when the invocation is created.
	scope *scope
	// servedDeps lists the throttled dependencies that have already accepted a call of
	// this invocation: its later calls to them are let finish the turn (see shed.go).
	servedDeps []string
}

// callSet holds an invocation's calls in flight. An invocation has a handful at a time
// (the calls of one model response), so a slice searched in order costs less than a
// map: no hashing of the call ID and, for the first four calls, no allocation past
// the invocation's own (its callBuf).
type callSet []callEntry

type callEntry struct {
	k  callKey
	cl *call
}

func (s callSet) get(k callKey) *call {
	for i := range s {
		if s[i].k == k {
			return s[i].cl
		}
	}
	return nil
}

func (s *callSet) put(k callKey, cl *call) {
	for i := range *s {
		if (*s)[i].k == k {
			(*s)[i].cl = cl
			return
		}
	}
	*s = append(*s, callEntry{k: k, cl: cl})
}

func (s *callSet) del(k callKey) {
	for i := range *s {
		if (*s)[i].k == k {
			last := len(*s) - 1
			(*s)[i] = (*s)[last]
			(*s)[last] = callEntry{}
			*s = (*s)[:last]
			return
		}
	}
}

// seenUnknown records a call to an invented tool name and reports whether it was
// already recorded.
func (inv *invocation) seenUnknown(k callKey) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.unknown[k] {
		return true
	}
	if inv.unknown == nil {
		inv.unknown = map[callKey]bool{}
	}
	inv.unknown[k] = true
	return false
}

func (inv *invocation) add(k callKey, cl *call) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.freed {
		return false
	}
	if inv.calls == nil {
		inv.calls = inv.callBuf[:0]
	}
	inv.calls.put(k, cl)
	return true
}

// owner returns the layer that owns the call under k, or 0.
func (inv *invocation) owner(k callKey) layer {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if cl := inv.calls.get(k); cl != nil {
		return cl.owner
	}
	return 0
}

// take removes and returns the call under k if l owns it.
func (inv *invocation) take(k callKey, l layer) *call {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	cl := inv.calls.get(k)
	if cl == nil || cl.owner != l {
		return nil
	}
	inv.calls.del(k)
	return cl
}

// busy reports whether a call of the invocation is still in flight.
func (inv *invocation) busy() bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return len(inv.calls) > 0
}

// drain removes every call and marks the invocation freed.
func (inv *invocation) drain() []*call {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.freed = true
	out := make([]*call, 0, len(inv.calls))
	for _, e := range inv.calls {
		out = append(out, e.cl)
	}
	inv.calls = nil
	return out
}

// scope collects the invocations created inside one AgentTool call, whose nested runner
// has no plugins and so no end-of-run hook: AgentTool frees them when the call returns.
type scope struct {
	mu  sync.Mutex
	ids []string

	// root is the invocation whose operations every nested run of this call shares
	// (hops.go): the outermost run's, however deep the agent tools nest.
	root   string
	parent *scope         // the scope of the agent-tool call this one runs inside, or nil
	owner  *scopedTool    // the agent tool whose call this is
	failed []innerFailure // counted failures and refusals of the nested runs' calls
}

type scopeKey struct{}

// invocation returns the state of ctx's invocation, creating it when create is set.
func (c *Callbacks) invocation(ctx agent.Context, create bool) *invocation {
	id := ctx.InvocationID()
	now := c.nanos()
	if inv := c.invs.load(id); inv != nil {
		inv.lastUsed.Store(now)
		return inv
	}
	if !create {
		return nil
	}
	inv := &invocation{id: id, draw: c.drawOf(id), tracker: c.guard.Track()}
	inv.scope, _ = ctx.Value(scopeKey{}).(*scope) // set before the invocation is shared
	inv.lastUsed.Store(now)
	if found, loaded := c.invs.loadOrStore(inv); loaded {
		return found
	}
	c.live.Add(1)
	if s := inv.scope; s != nil {
		s.mu.Lock()
		s.ids = append(s.ids, id)
		s.mu.Unlock()
	}
	c.maybeSweep(ctx, now)
	return inv
}

// free drops an invocation's state and releases calls that never reached their
// after-callback.
func (c *Callbacks) free(ctx context.Context, id string) {
	inv := c.invs.loadAndDelete(id)
	if inv == nil {
		return
	}
	c.live.Add(-1)
	for _, cl := range inv.drain() {
		c.orphans.Add(1)
		// Without the dispatch marker's word it may have reached its tool: report it
		// to the Observer as UNKNOWN rather than lose it.
		sent := !cl.tracked || cl.dispatched.Load()
		c.settle(ctx, inv, cl, classify.Classification{Outcome: classify.Unknown, Class: classify.ClassCanceled, Verdict: classify.Neutral}, "", EventOrphanReleased, sent)
	}
	if r := c.cfg.SideEffects.Retry; r != nil {
		r.Forget(id) // after the orphans' attempts were finished above
	}
}

// maybeSweep frees invocations idle longer than IdleInvocationTimeout, at most once a
// quarter of that timeout. An invocation with a call still in flight is not idle,
// however long that call takes: freeing it would release the call's bulkhead slot
// while the call still holds its connection, and lose the call's outcome. Calls end
// (adk-go runs the after-callbacks of every call, also when the tool fails or its
// context ends); a run's state is freed at its end by AfterRun in any case.
func (c *Callbacks) maybeSweep(ctx context.Context, now int64) {
	last := c.lastSweep.Load()
	if now-last < int64(c.idle/4) || !c.lastSweep.CompareAndSwap(last, now) {
		return
	}
	c.invs.each(func(inv *invocation) bool {
		if now-inv.lastUsed.Load() >= int64(c.idle) && !inv.busy() {
			c.free(ctx, inv.id)
		}
		return true
	})
}
