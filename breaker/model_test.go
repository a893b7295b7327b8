package breaker

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

// refModel restates the rules of the README's "How the breaker decides" section, one
// sentence at a time, and nothing else: no buckets ring, no stripes, no generations
// packed into a word, no atomics, no lazy expiry. Every rule it implements is quoted
// beside the code. The randomized test drives it and the real breaker with the same
// operations and requires them to agree after every step.
type refModel struct {
	p     Policy
	state State
	// "Every state change starts a new period; a report from a permit granted in an
	// earlier period is dropped (its Retry-After still counts)."
	period int

	// The window: every measured call of the current period with the time it was
	// reported. "The window is emptied when the breaker closes (probes succeeded or
	// Reset); ForceClosed keeps it."
	calls     []refCall
	winOrigin int64 // when the window was last emptied: buckets are counted from here
	latest    int64 // the latest time the window has seen ("it never slides backwards")

	reopenAt     int64
	failedProbes int
	notBefore    int64
	hasNotBefore bool

	probes    map[uint64]refLease // live and expired leases of this half-open period
	succeeded int
	nextToken uint64
	rnd       func() float64
}

type refCall struct {
	at           int64
	failed, slow bool
}

type refLease struct{ start, deadline int64 }

type refPermit struct {
	period int
	start  int64
	token  uint64 // 0 = not a probe
}

func newRefModel(p Policy, rnd func() float64) *refModel {
	return &refModel{p: p.WithDefaults(), probes: map[uint64]refLease{}, rnd: rnd}
}

func (m *refModel) setState(s State, now int64) {
	m.state, m.period = s, m.period+1
	switch s {
	case Closed:
		// "Closing empties the window, forgets the cooldown growth and any stated delay."
		m.calls, m.winOrigin, m.latest = nil, now, now
		m.failedProbes = 0
		m.hasNotBefore = false
	case ForcedClosed:
		m.failedProbes = 0
	case HalfOpen:
		m.probes, m.succeeded = map[uint64]refLease{}, 0
	}
}

// minCalls: "the volume gate is MinimumCalls, or min(MinimumCalls, WindowCalls) for a
// count-based window".
func (m *refModel) minCalls() int64 {
	if m.p.WindowCalls > 0 {
		return int64(min(m.p.MinimumCalls, m.p.WindowCalls))
	}
	return int64(m.p.MinimumCalls)
}

// counts: "a time-based window of Window cut into Buckets buckets of Window/Buckets,
// counted from when the window was last emptied, holds the calls reported in the bucket
// of the latest time it has seen and the Buckets-1 buckets before it"; "a count-based
// window holds the last WindowCalls measured calls".
func (m *refModel) counts() Counts {
	var in []refCall
	if n := m.p.WindowCalls; n > 0 {
		in = m.calls[max(0, len(m.calls)-n):]
	} else {
		width := int64(m.p.Window) / int64(m.p.Buckets)
		cur := (m.latest - m.winOrigin) / width
		for _, c := range m.calls {
			if (c.at-m.winOrigin)/width > cur-int64(m.p.Buckets) {
				in = append(in, c)
			}
		}
	}
	var c Counts
	for _, call := range in {
		c.Calls++
		if call.failed {
			c.Failures++
		}
		if call.slow {
			c.SlowCalls++
		}
	}
	return c
}

func (m *refModel) see(now int64) { m.latest = max(m.latest, now) }

// live: "a probe's slot is a lease of ProbeLease from its admission; at its deadline
// the slot is free again and the probe's report, if it ever comes, is dropped".
func (m *refModel) live(now int64) int {
	n := 0
	for _, l := range m.probes {
		if now < l.deadline {
			n++
		}
	}
	return n
}

func (m *refModel) allow(now int64) (refPermit, bool) {
	switch m.state {
	case Closed, ForcedClosed:
		return refPermit{period: m.period, start: now}, true
	case ForcedOpen:
		return refPermit{}, false
	case Open:
		// "Open rejects until the reopen time; the first call at or after it moves the
		// breaker to half_open and becomes a probe."
		if now < m.reopenAt {
			return refPermit{}, false
		}
		m.setState(HalfOpen, now)
	}
	// "Half-open lets HalfOpenProbes probes through per period: the probes that
	// succeeded and the live leases hold a place; an ignored probe or a lease that ran
	// out gives its place back."
	if m.succeeded+m.live(now) >= m.p.HalfOpenProbes {
		return refPermit{}, false
	}
	m.nextToken++
	m.probes[m.nextToken] = refLease{start: now, deadline: now + int64(m.p.ProbeLease)}
	return refPermit{period: m.period, start: now, token: m.nextToken}, true
}

// open: "the open period is min(Cooldown × CooldownMultiplier^failedProbes ×
// (1 + Jitter × U), MaxCooldown), and at least until the latest instant the dependency
// asked not to be called before".
func (m *refModel) open(now int64) {
	c := float64(m.p.Cooldown) * math.Pow(m.p.CooldownMultiplier, float64(m.failedProbes))
	if m.p.Jitter > 0 {
		c *= 1 + m.p.Jitter*m.rnd()
	}
	wait := int64(time.Duration(min(c, float64(m.p.MaxCooldown))))
	if m.hasNotBefore {
		wait = max(wait, m.notBefore-now)
	}
	m.reopenAt = now + wait
	m.setState(Open, now)
}

func (m *refModel) report(pm refPermit, v Verdict, retryAfter time.Duration, now int64) {
	// "A report with a Retry-After, whatever its verdict and period, means the
	// dependency may not be called before now + min(RetryAfter, MaxRetryAfter); an open
	// breaker's reopen time moves that late at once, and the next open period lasts at
	// least that long."
	if retryAfter > 0 {
		until := now + int64(min(retryAfter, m.p.MaxRetryAfter))
		if !m.hasNotBefore || until > m.notBefore {
			m.notBefore, m.hasNotBefore = until, true
		}
		if m.state == Open {
			m.reopenAt = max(m.reopenAt, until)
		}
	}
	if pm.period != m.period {
		return
	}
	// "A call is slow when it reports at least SlowCallThreshold after Allow admitted it."
	slow := m.p.SlowCallThreshold > 0 && v != Ignore && now-pm.start >= int64(m.p.SlowCallThreshold)
	if pm.token != 0 {
		l, ok := m.probes[pm.token]
		if !ok || now >= l.deadline {
			return // the lease ran out: dropped
		}
		delete(m.probes, pm.token)
		switch {
		case v == Ignore: // "an ignored probe frees its slot"
		case v == Failure || slow: // "a failed or slow probe reopens"
			m.failedProbes++
			m.open(now)
		default: // "HalfOpenProbes successful probes close it"
			m.succeeded++
			if m.succeeded >= m.p.HalfOpenProbes {
				m.setState(Closed, now)
			}
		}
		return
	}
	if v == Ignore { // "an ignored call is not measured"
		return
	}
	m.see(now)
	m.calls = append(m.calls, refCall{at: now, failed: v == Failure, slow: slow})
	if m.state != Closed { // "forced closed measures but never trips"
		return
	}
	// "After every measured call in the closed state the breaker trips when the window
	// holds at least the volume gate's calls and float64(failures)/float64(calls) ≥
	// FailureRateThreshold, or (slow calls tracked) float64(slow)/float64(calls) ≥
	// SlowCallRateThreshold."
	c := m.counts()
	if c.Calls < m.minCalls() {
		return
	}
	if float64(c.Failures)/float64(c.Calls) >= m.p.FailureRateThreshold ||
		m.p.SlowCallThreshold > 0 && float64(c.SlowCalls)/float64(c.Calls) >= m.p.SlowCallRateThreshold {
		m.open(now)
	}
}

// retryAfter: "open: until the reopen time; half-open with every place taken: until the
// earliest live lease ends; otherwise zero".
func (m *refModel) retryAfter(now int64) time.Duration {
	switch m.state {
	case Open:
		return time.Duration(max(0, m.reopenAt-now))
	case HalfOpen:
		if m.succeeded+m.live(now) < m.p.HalfOpenProbes || m.live(now) == 0 {
			return 0
		}
		earliest := int64(math.MaxInt64)
		for _, l := range m.probes {
			if now < l.deadline {
				earliest = min(earliest, l.deadline)
			}
		}
		return time.Duration(earliest - now)
	}
	return 0
}

// modelPolicies cover the time and count windows, one and several probes, growth,
// jitter, slow calls, thresholds that are not round in binary, and short leases.
var modelPolicies = []Policy{
	{MinimumCalls: 5, Window: 10 * time.Second, Buckets: 5, Cooldown: 2 * time.Second, ProbeLease: 3 * time.Second},
	{MinimumCalls: 3, FailureRateThreshold: 2.0 / 3, Window: 4 * time.Second, Buckets: 4, Cooldown: time.Second,
		CooldownMultiplier: 2, MaxCooldown: 10 * time.Second, HalfOpenProbes: 3, ProbeLease: time.Second},
	{MinimumCalls: 4, Window: 6 * time.Second, Buckets: 3, SlowCallThreshold: 700 * time.Millisecond,
		SlowCallRateThreshold: 0.5, Cooldown: 1500 * time.Millisecond, HalfOpenProbes: 2, ProbeLease: 2 * time.Second},
	{MinimumCalls: 1, Window: time.Second, Buckets: 1, Cooldown: 10 * time.Millisecond, ProbeLease: 10 * time.Millisecond,
		MaxRetryAfter: time.Second},
	{MinimumCalls: 6, FailureRateThreshold: 0.1, WindowCalls: 10, Cooldown: time.Second, CooldownMultiplier: 3,
		MaxCooldown: 5 * time.Second, Jitter: 0.5, ProbeLease: 1500 * time.Millisecond},
	{MinimumCalls: 20, FailureRateThreshold: 1.0 / 3, WindowCalls: 4, SlowCallThreshold: 500 * time.Millisecond,
		SlowCallRateThreshold: 0.75, Cooldown: 800 * time.Millisecond, HalfOpenProbes: 2, ProbeLease: 600 * time.Millisecond},
	{MinimumCalls: 8, FailureRateThreshold: 0.3, Window: 2 * time.Second, Buckets: 10, Cooldown: 700 * time.Millisecond,
		CooldownMultiplier: 1.5, MaxCooldown: 2 * time.Second, Jitter: 0.9, HalfOpenProbes: 4, ProbeLease: 400 * time.Millisecond,
		MaxRetryAfter: 3 * time.Second},
}

// TestAgreesWithReferenceModel runs 7 policies × 40 seeds × 500 steps (140,000 steps,
// a few seconds). AGENTBREAKER_MODEL_STEPS=1000000 runs at least that many in total.
func TestAgreesWithReferenceModel(t *testing.T) {
	t.Parallel()
	seeds, steps := 40, 500
	if s := os.Getenv("AGENTBREAKER_MODEL_STEPS"); s != "" {
		total, err := strconv.Atoi(s)
		if err != nil || total <= 0 {
			t.Fatalf("AGENTBREAKER_MODEL_STEPS = %q: want a positive number of steps", s)
		}
		seeds = (total + len(modelPolicies)*steps - 1) / (len(modelPolicies) * steps)
	}
	var ran int
	for pi, p := range modelPolicies {
		for seed := range uint64(seeds) {
			if !t.Run(fmt.Sprintf("policy%d/seed%d", pi, seed), func(t *testing.T) {
				runAgainstModel(t, p, seed, steps)
			}) {
				return
			}
			ran += steps
		}
	}
	t.Logf("%d steps, 0 disagreements", ran)
}

func runAgainstModel(t *testing.T, p Policy, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 0xb7ea))
	if p.Jitter == 0 {
		p.Jitter = -1
	}
	u := r.Float64() // the jitter's U, fixed for the run
	fc := clock.NewFake(time.Time{})
	b := MustNew(Config{Name: "m", Clock: fc, Policy: p, Rand: func() float64 { return u }})
	m := newRefModel(b.Policy(), func() float64 { return u })
	type pair struct {
		real Permit
		ref  refPermit
	}
	var open []pair
	var log []string
	now := func() int64 { return b.toNanos(fc.Now()) }
	fail := func(step int, what string, want, got any) {
		t.Helper()
		t.Fatalf("seed %d step %d: %s: model %v, breaker %v\nrecent: %q", seed, step, what, want, got, log)
	}
	window := b.Policy().Window
	for step := range steps {
		var op string
		switch k := r.IntN(100); {
		case k < 38:
			rp, err := b.Allow()
			mp, ok := m.allow(now())
			op = fmt.Sprintf("allow -> %v", ok)
			if ok != (err == nil) {
				fail(step, "admitted", ok, err == nil)
			}
			if ok {
				if mp.token != 0 != rp.IsProbe() {
					fail(step, "probe", mp.token != 0, rp.IsProbe())
				}
				open = append(open, pair{rp, mp})
			}
		case k < 72 && len(open) > 0:
			i := r.IntN(len(open))
			pr := open[i]
			open = append(open[:i], open[i+1:]...)
			v := []Verdict{Success, Success, Success, Failure, Failure, Ignore}[r.IntN(6)]
			var ra time.Duration
			if r.IntN(5) == 0 {
				ra = time.Duration(1+r.IntN(5000)) * time.Millisecond
			}
			op = fmt.Sprintf("report %v ra=%v probe=%v", v, ra, pr.ref.token != 0)
			pr.real.Report(Report{Verdict: v, RetryAfter: ra})
			m.report(pr.ref, v, ra, now())
		case k < 75 && len(open) > 0:
			i := r.IntN(len(open)) // this caller crashed: its permit never reports
			open = append(open[:i], open[i+1:]...)
			op = "abandon"
		case k < 93:
			var d time.Duration
			switch r.IntN(20) {
			case 0:
				d = window + time.Duration(r.IntN(3000))*time.Millisecond // a gap longer than the window
			case 1:
				d = b.Policy().ProbeLease + time.Duration(r.IntN(500))*time.Millisecond // longer than a lease
			default:
				d = time.Duration(r.IntN(800)) * time.Millisecond
			}
			fc.Advance(d)
			op = fmt.Sprintf("advance %v", d)
		case k < 95:
			b.ForceOpen("")
			m.setState(ForcedOpen, now())
			op = "force open"
		case k < 97:
			b.ForceClosed("")
			m.setState(ForcedClosed, now())
			m.see(now())
			op = "force closed"
		default:
			b.Reset("")
			m.setState(Closed, now())
			op = "reset"
		}
		log = append(log, op)
		if len(log) > 16 {
			log = log[1:]
		}
		if got := b.State(); got != m.state {
			fail(step, "state", m.state, got)
		}
		if got, want := b.RetryAfter(), m.retryAfter(now()); got != want {
			fail(step, "retry-after", want, got)
		}
		if m.state.Admits() {
			m.see(now()) // "a snapshot slides the window to now"
			if got, want := b.Snapshot().Window, m.counts(); got != want {
				fail(step, "window", want, got)
			}
		}
	}
}
