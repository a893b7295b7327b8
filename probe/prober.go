package probe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
)

// Prober runs each dependency's health check while its breaker refuses calls, on its
// own schedule, with or without traffic. It is safe for concurrent use, but one
// goroutine drives it: Run, or a caller of ProbeDue.
type Prober struct {
	cfg     Config
	targets []*target
	round   sync.Mutex // one round of ProbeDue at a time
	closed  atomic.Bool
	stopRun func() // set by Start: ends its Run and waits for it
}

type target struct {
	c       Check
	next    time.Time   // when to look at the breaker again; guarded by Prober.round
	running atomic.Bool // the check's goroutine has not returned yet
}

// Result is one probe's outcome.
type Result struct {
	Dependency string    // the breaker's name
	Check      string    // Check.Name
	At         time.Time // when the probe started
	Took       time.Duration
	// Classification is the check's outcome as the breaker read it.
	Classification classify.Classification
	// Healthy reports that the probe succeeded.
	Healthy bool
	// Problem names a bad probe: "panic", "timeout", "still_running" (the previous
	// check has not returned), "neutral" (an error the check returned that says
	// neither healthy nor failing, such as a 401, a 403 or a 404, even where the
	// classify rules call it healthy for a user's call: counted as failed, since only a
	// healthy answer that is not an error may close a breaker), "rate_limited" (a
	// 429), "request_timeout" (a 408) or "canceled" (the prober's context ended: not
	// counted). Every 4xx answer has one. Empty for an ordinary success or failure.
	Problem string
	// Err is the check's error (or the panic, as an error); nil when healthy.
	Err error
	// State is the breaker's state once the outcome was reported.
	State breaker.State
}

// ClassifiedError is an error that carries its classification, so a Func can say
// exactly what its outcome was (HTTPGet returns one for every unhealthy answer).
type ClassifiedError struct {
	Classification classify.Classification
	Err            error
}

func (e *ClassifiedError) Error() string { return e.Err.Error() }
func (e *ClassifiedError) Unwrap() error { return e.Err }

// errTimeout is the cause of a probe's context when its Timeout fired.
var errTimeout = errors.New("probe: timed out")

// New validates cfg and attaches the prober to every check's breaker: from then on
// those breakers' half-open state belongs to it (user calls are refused until a probe
// closes the breaker). Call Run, or ProbeDue on a schedule of your own, and Close
// when done. A breaker whose prober stops asking for probes hands probing back to
// user calls after one interval and one ProbeLease.
func New(cfg Config) (*Prober, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Prober{cfg: cfg}
	for i, c := range cfg.Checks {
		if err := c.Breaker.AttachProber(cfg.MaxInterval); err != nil {
			for _, t := range p.targets {
				t.c.Breaker.DetachProber()
			}
			return nil, bad(fmt.Sprintf("Checks[%d].Breaker", i), c.Breaker.Name(), "cannot be probed: "+err.Error())
		}
		p.targets = append(p.targets, &target{c: c})
	}
	return p, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Prober {
	p, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return p
}

// Close detaches the prober from its breakers: user calls probe them again. Probes
// in flight finish and report. For a prober from Start, Close first ends its Run and
// waits for it. Close is idempotent, and a no-op on a nil Prober.
func (p *Prober) Close() {
	if p == nil || p.closed.Swap(true) {
		return
	}
	if p.stopRun != nil {
		p.stopRun()
	}
	for _, t := range p.targets {
		t.c.Breaker.DetachProber()
	}
}

// Run probes until ctx is done, then returns ctx's error. It does not Close the
// prober. On a nil Prober (FromMap with nothing to probe) it waits for ctx.
func (p *Prober) Run(ctx context.Context) error {
	if p == nil { // FromMap found nothing to probe
		<-ctx.Done()
		return ctx.Err()
	}
	for {
		next := p.ProbeDue(ctx)
		if err := p.cfg.Sleep(ctx, next.Sub(p.cfg.Clock.Now())); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// ProbeDue runs every probe that is due at the clock's current time, each on its own
// goroutine, waits for them (each at most its Timeout), and returns when the next one
// is due. A breaker that admits calls is looked at again one interval later; one that
// refuses them is probed when its open period ends.
func (p *Prober) ProbeDue(ctx context.Context) time.Time {
	p.round.Lock()
	defer p.round.Unlock()
	now := p.cfg.Clock.Now()
	var wg sync.WaitGroup
	for _, t := range p.targets {
		if now.Before(t.next) || p.closed.Load() {
			continue
		}
		wg.Go(func() { t.next = p.step(ctx, t) })
	}
	wg.Wait()
	next := now.Add(p.cfg.MaxInterval)
	for _, t := range p.targets {
		if t.next.Before(next) {
			next = t.next
		}
	}
	return next
}

// step probes t while its breaker lets a probe go (up to HalfOpenProbes of them, for
// a breaker that wants several) and returns when to look at it again.
func (p *Prober) step(ctx context.Context, t *target) time.Time {
	b := t.c.Breaker
	interval := min(b.Policy().Cooldown, p.cfg.MaxInterval)
	for range b.Policy().HalfOpenProbes + 1 {
		now := p.cfg.Clock.Now()
		if ctx.Err() != nil {
			return now.Add(interval)
		}
		permit, err := b.AllowProbeAt(now)
		if err != nil {
			var oe *breaker.OpenError
			if errors.As(err, &oe) && oe.Until.After(now) {
				return oe.Until // the open period's end, a stated delay, or the fleet's turn
			}
			return now.Add(interval) // closed, or forced open: look again later
		}
		r := p.probe(ctx, t, now)
		report := r.Classification.BreakerReport()
		switch {
		case r.Problem == "canceled":
			report.Verdict = breaker.Ignore
		case r.Healthy:
			report.Verdict = breaker.Success
		default:
			report.Verdict = breaker.Failure
		}
		permit.ReportAt(p.cfg.Clock.Now(), report)
		r.State = b.State()
		p.emit(r)
	}
	return p.cfg.Clock.Now().Add(interval)
}

type outcome struct {
	err      error
	panicked any
}

// probe runs t's check once, bounded by its Timeout, and classifies the outcome.
func (p *Prober) probe(ctx context.Context, t *target, start time.Time) (r Result) {
	r = Result{Dependency: t.c.Breaker.Name(), Check: t.c.Name, At: start}
	defer func() { r.Took = p.cfg.Clock.Now().Sub(start) }()
	if !t.running.CompareAndSwap(false, true) {
		r.Problem = "still_running"
		r.Err = fmt.Errorf("probe: the previous %s check of %s has not returned; it ignores its context", t.c.Name, r.Dependency)
		r.Classification = classify.ForClass(classify.ClassTimeout)
		return r
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan outcome, 1) // buffered: a check that returns late never blocks
	go func() {
		var o outcome
		defer func() {
			if v := recover(); v != nil {
				o = outcome{panicked: v}
			}
			t.running.Store(false) // before the send: the next probe must find it idle
			done <- o
		}()
		o.err = t.c.Func(cctx)
	}()
	stop := p.cfg.AfterFunc(t.c.Timeout, func() { cancel(errTimeout) })
	defer stop()
	var o outcome
	select {
	case o = <-done:
	case <-cctx.Done():
		if ctx.Err() != nil {
			r.Problem, r.Err = "canceled", ctx.Err()
			r.Classification = classify.ForClass(classify.ClassCanceled)
			return r
		}
		r.Problem = "timeout"
		r.Err = fmt.Errorf("probe: %s check of %s took longer than %s", t.c.Name, r.Dependency, t.c.Timeout)
		r.Classification = classify.ForClass(classify.ClassTimeout)
		return r
	}
	if o.panicked != nil {
		r.Problem, r.Err = "panic", fmt.Errorf("probe: %s check of %s panicked: %v", t.c.Name, r.Dependency, o.panicked)
		r.Classification = classify.ForClass(classify.ClassUnclassified)
		return r
	}
	r.Err = o.err
	r.Classification, r.Problem = p.classify(ctx, t, o.err)
	if r.Problem == "panic" {
		r.Err = fmt.Errorf("probe: %s check of %s returned an error (%T) that panics when read", t.c.Name, r.Dependency, o.err)
	}
	r.Healthy = r.Problem == "" && r.Classification.Verdict == classify.Healthy
	if r.Healthy {
		r.Err = nil
	} else if r.Err == nil {
		r.Err = fmt.Errorf("probe: %s check of %s: %s", t.c.Name, r.Dependency, r.Classification.Class)
	}
	return r
}

// classify reads a check's error, guarding against classifiers and errors that panic
// (a typed nil error whose Error method dereferences it, say).
func (p *Prober) classify(ctx context.Context, t *target, err error) (c classify.Classification, problem string) {
	defer func() {
		if v := recover(); v != nil {
			c, problem = classify.ForClass(classify.ClassUnclassified), "panic"
		}
	}()
	c = t.c.Classify(ctx, err)
	switch {
	case c.Verdict == classify.Neutral && ctx.Err() != nil:
		return c, "canceled"
	case c.StatusCode == http.StatusTooManyRequests:
		return c, "rate_limited" // fails as a capacity signal would, but may be the probe's own rate
	case c.StatusCode == http.StatusRequestTimeout:
		return c, "request_timeout"
	case c.StatusCode >= 400 && c.StatusCode < 500, c.Verdict == classify.Neutral,
		c.Verdict != classify.Healthy && c.Verdict != classify.Counts:
		return c, "neutral"
	case c.Verdict == classify.Healthy && err != nil:
		// The rules call a 401 or a 404 healthy because, for a user's call, the
		// dependency answered. For a health check it is an error the check returned:
		// a rotated key or a moved URL, which says nothing about the dependency's
		// health and must not reopen traffic to it.
		return c, "neutral"
	}
	return c, ""
}

// classifyError is Check.Classify's default.
func classifyError(ctx context.Context, err error) classify.Classification {
	if ce, ok := errors.AsType[*ClassifiedError](err); ok {
		return ce.Classification
	}
	return classify.Error(ctx, err)
}

func (p *Prober) emit(r Result) {
	attrs := []any{slog.String("dependency", r.Dependency), slog.String("check", r.Check),
		slog.String("breaker_state", r.State.String()), slog.Duration("took", r.Took)}
	switch {
	case r.Healthy:
		p.cfg.Logger.Debug("agentbreaker: health probe succeeded", attrs...)
	case r.Problem == "canceled":
	default:
		attrs = append(attrs, slog.String("class", string(r.Classification.Class)), slog.String("error", errText(r.Err)))
		if r.Problem != "" {
			attrs = append(attrs, slog.String("problem", r.Problem))
		}
		level := slog.LevelWarn
		if r.Problem == "panic" {
			level = slog.LevelError
		}
		p.cfg.Logger.Log(context.Background(), level, "agentbreaker: health probe failed", attrs...)
	}
	for _, h := range p.cfg.OnResult {
		h(r)
	}
}

// errText is err's text, or a note when reading it panics (a hook's own error).
func errText(err error) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("%T (its Error method panics)", err)
		}
	}()
	return err.Error()
}
