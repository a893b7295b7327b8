package callpath

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// Control names the stage that refused a call.
type Control uint8

const (
	// Held: the dependency stated a delay (Retry-After) that has not passed.
	Held Control = iota + 1
	// Open: the breaker did not admit the call (open, forced open, or half-open with
	// its probe out).
	Open
	// Shed: the dependency's throttle held the call back while the dependency is
	// partly overloaded (its breaker closed).
	Shed
	// Limited: the call is over the dependency's adaptive concurrency limit for its
	// priority.
	Limited
	// Full: the dependency's bulkhead had no free slot.
	Full
	// Stopped: the retry orchestrator refused the call's operation another attempt.
	Stopped
)

// Refusal is a stage's answer for a call it did not admit. The call was never sent.
type Refusal struct {
	Control Control
	// Class is what the answer cites: the class of the answer that stated the delay,
	// the dependency's last counted failure, or breaker_open.
	Class classify.Class
	// State is the breaker state that refused the call (which the breaker may have
	// left by the time anyone reads it again).
	State breaker.State
	// RetryAfter is when the call could be admitted again, when known.
	RetryAfter time.Duration
	// Priority is the call's priority, for Shed and Limited.
	Priority throttle.Priority
	// Counts says the refusal counted against the breaker (a bulkhead full of slow
	// calls); Sustained, that the bulkhead's rejections are sustained.
	Counts, Sustained bool
	// Limit is the adaptive limit that refused the call, for Limited.
	Limit int
	// Reason and Attempts say why the retry orchestrator stopped, for Stopped (a
	// retry.Reason: the path sits below the retry package, which runs it).
	Reason   string
	Attempts int
	// Err is the refusal as an error, for a hop that answers with one (the retry
	// orchestrator, the HTTP transport): the breaker's own for Open, a
	// classify.LocalRejection for Held.
	Err error
}

// Call is one call on the path: what the hop says of it, and the ticket it carries
// from admission to settlement. The hop fills the exported fields; the zero ticket
// is admitted by nothing.
type Call struct {
	Dependency   string
	Tool         string // the name the model used: a tool, or a remote agent
	CallID       string // the model's function call ID, inside tool callbacks
	InvocationID string
	Breaker      *breaker.Breaker
	// NoProbe says the call may never be the breaker's half-open probe (a mutation):
	// while the breaker is half-open it is refused.
	NoProbe bool

	permit breaker.Permit
	start  int64
}

// Told is what the sink made of a refusal: the invocation's count of answers for the
// dependency, and whether they are now firm (the loop guard). Shadow says the
// dependency is in shadow mode: the refusal was recorded as what would have
// happened, and the call goes on.
type Told struct {
	Count  int
	Firm   bool
	Shadow bool
}

// Settlement is how a sent call ended, as the sink reports it.
type Settlement struct {
	Classification classify.Classification
	// Text is the dependency's own text of a failure, for the operator's fingerprint;
	// it never reaches the model.
	Text    string
	Elapsed time.Duration
	Probe   bool
}

// Sink turns the path's decisions into what operators see: one Event, metric and
// log record per decision, the same whichever hop the call came through.
type Sink interface {
	Refused(ctx context.Context, c *Call, r Refusal) Told
	Settled(ctx context.Context, c *Call, s Settlement)
	// Shadowed reports a refusal a dependency in shadow mode did not enforce.
	Shadowed(ctx context.Context, c *Call, r Refusal)
}

// Path runs the stages. It is safe for concurrent use.
type Path struct {
	nanos func() int64
	sink  Sink
	holds holds
	last  sync.Map // dependency key -> classify.Class of its last counted failure
}

// New returns a path on the clock nanos (nanoseconds) that reports to sink; a nil
// sink reports nothing (a hop whose own records say what happened).
func New(nanos func() int64, sink Sink) *Path { return &Path{nanos: nanos, sink: sink} }

// Nanos returns clk read as nanoseconds: the coarse clock when clk is the system
// clock (or nil), which costs no system call on the hot path.
func Nanos(clk clock.Clock) func() int64 {
	if clk == nil || clock.IsSystem(clk) {
		return clock.CoarseNanos
	}
	return func() int64 { return clk.Now().UnixNano() }
}

// IsProbe reports whether the call is its breaker's half-open probe.
func (c *Call) IsProbe() bool { return c.permit.IsProbe() }

// Admit runs the admission stages in order. On refusal the call holds nothing and
// the hop answers it without sending, after telling the path ([Path.Refuse]). For a
// dependency in shadow mode a refusal is reported as what would have happened and
// the call is admitted without a permit: it is sent, and the breaker, which would
// not have let it through, learns nothing from it.
func (p *Path) Admit(ctx context.Context, c *Call) (Refusal, bool) {
	r, ok := p.admit(c)
	if !ok && c.Breaker.Shadow() {
		p.Refuse(ctx, c, r)
		r, ok = Refusal{}, true
	}
	c.start = p.nanos()
	return r, ok
}

func (p *Path) admit(c *Call) (Refusal, bool) {
	if r, held := p.Held(c.Dependency, c.Breaker); held {
		return r, false
	}
	var err error
	if c.NoProbe {
		c.permit, err = c.Breaker.AllowNoProbe()
	} else {
		c.permit, err = c.Breaker.Allow()
	}
	if err != nil {
		return p.OpenRefusal(c.Dependency, c.Breaker, err), false
	}
	return Refusal{}, true
}

// Held reports whether dep's stated delay refuses a call now. A breaker forced
// closed lets everything through, holds included.
func (p *Path) Held(dep string, b *breaker.Breaker) (Refusal, bool) {
	if !p.holds.any.Load() {
		return Refusal{}, false // no dependency ever stated a delay: one atomic load
	}
	left, class := p.holds.left(dep, p.nanos())
	if left <= 0 {
		return Refusal{}, false
	}
	st := b.State()
	if st == breaker.ForcedClosed {
		return Refusal{}, false
	}
	return Refusal{Control: Held, Class: class, State: st, RetryAfter: left, Err: &heldError{dep, left, class}}, true
}

// heldError is a call refused because its dependency stated a delay: a local
// rejection (FAILED_BEFORE_SEND, neutral) citing the class of the answer that
// stated it.
type heldError struct {
	dep   string
	left  time.Duration
	class classify.Class
}

func (e *heldError) Error() string {
	return fmt.Sprintf("agentbreaker: %s asked for a delay (%s); %s left", e.dep, e.class, e.left.Round(time.Millisecond))
}

func (e *heldError) RejectedLocally() string { return string(e.class) }

// Fail spends an admitted call's permit as a failure without sending it: a refusal
// that counts against the breaker (a bulkhead full of slow calls).
func (p *Path) Fail(c *Call) { c.permit.Failure() }

// OpenRefusal is the refusal for err, the error of dep's breaker b refusing a call.
func (p *Path) OpenRefusal(dep string, b *breaker.Breaker, err error) Refusal {
	r := Refusal{Control: Open, Class: p.LastClass(dep), State: b.State(), Err: err}
	if oe, ok := errors.AsType[*breaker.OpenError](err); ok {
		r.RetryAfter, r.State = oe.RetryAfter(), oe.State
	}
	if r.State == breaker.ForcedOpen {
		// An operator took the dependency out of service: citing its last failure
		// would tell the model something that is not why it is refused.
		r.Class = classify.ClassBreakerOpen
	}
	return r
}

// Refuse tells the sink of a refusal and returns what it made of it. For a
// dependency in shadow mode it is a would-refuse record (Told.Shadow), and the hop
// sends the call.
func (p *Path) Refuse(ctx context.Context, c *Call, r Refusal) Told {
	if c.Breaker.Shadow() {
		if p.sink != nil {
			p.sink.Shadowed(ctx, c, r)
		}
		return Told{Shadow: true}
	}
	if p.sink == nil {
		return Told{}
	}
	return p.sink.Refused(ctx, c, r)
}

// Release gives back a call that was admitted and never sent: the breaker learns
// nothing from it. It is a no-op on a call already settled or released.
func (p *Path) Release(c *Call) { c.permit.Ignore() }

// Settle runs the settlement stages in reverse order for a call that was sent (or
// may have been): the breaker hears the classification, a delay the answer stated
// holds the dependency, a counted failure becomes the class later refusals cite, and
// the sink reports it.
func (p *Path) Settle(ctx context.Context, c *Call, cls classify.Classification, text string) {
	probe := c.permit.IsProbe() // read before Report, which spends the permit
	c.permit.Report(cls.BreakerReport())
	p.Note(c.Dependency, c.Breaker, cls)
	if p.sink != nil {
		s := Settlement{Classification: cls, Text: text, Probe: probe, Elapsed: time.Duration(max(p.nanos()-c.start, 0))}
		p.sink.Settled(ctx, c, s)
	}
}

// Note records what a settled call's classification says of its dependency beyond
// the breaker's report: the delay it stated (bounded by the policy's MaxRetryAfter)
// and, for a counted failure, its class. A delay read from a refusal
// (FAILED_BEFORE_SEND: the call never left, for example a nested agentbreaker's
// open breaker) is not the dependency's and holds nothing.
func (p *Path) Note(dep string, b *breaker.Breaker, cls classify.Classification) {
	if cls.Verdict == classify.Counts {
		p.last.Store(dep, cls.Class)
	}
	if cls.RetryAfter <= 0 || cls.Outcome == classify.FailedBeforeSend {
		return
	}
	p.holds.note(dep, p.nanos(), min(cls.RetryAfter, b.Policy().MaxRetryAfter), cls.Class)
}

// LastClass is the class of dep's last counted failure, breaker_open if none: what
// a refusal cites.
func (p *Path) LastClass(dep string) classify.Class {
	if v, ok := p.last.Load(dep); ok {
		return v.(classify.Class)
	}
	return classify.ClassBreakerOpen
}

// Failed reports the class of dep's last counted failure, if it had one.
func (p *Path) Failed(dep string) (classify.Class, bool) {
	v, ok := p.last.Load(dep)
	if !ok {
		return "", false
	}
	return v.(classify.Class), true
}
