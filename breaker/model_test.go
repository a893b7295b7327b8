package breaker

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/stretchr/testify/require"
)

// refModel is a deliberately plain restatement of the breaker's rules: one goroutine,
// a list of calls instead of a bucket ring and stripes, a map of leases, no atomics.
// The randomized test drives it and the real breaker with the same operations and
// requires them to agree after every step.
type refModel struct {
	p            Policy
	state        State
	gen          int
	origin       int64 // start of the window's first bucket
	curIdx       int64 // the newest bucket the window has moved to
	calls        []refCall
	reopenAt     int64
	failedProbes int
	leases       map[uint64]int64 // token -> deadline
	admitted     int
	succeeded    int
	nextToken    uint64
}

type refCall struct {
	bucket       int64
	failed, slow bool
}

type refPermit struct {
	gen   int
	start int64
	token uint64
}

func newRefModel(p Policy) *refModel {
	return &refModel{p: p.WithDefaults(), leases: map[uint64]int64{}}
}

func (m *refModel) width() int64 { return int64(m.p.Window) / int64(m.p.Buckets) }

func (m *refModel) counts() Counts {
	var c Counts
	for _, call := range m.calls {
		if call.bucket <= m.curIdx-int64(m.p.Buckets) {
			continue
		}
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

// slideTo moves the window's newest bucket to the one now falls in; time running
// backwards moves nothing.
func (m *refModel) slideTo(now int64) {
	if idx := (now - m.origin) / m.width(); idx > m.curIdx {
		m.curIdx = idx
	}
}

func (m *refModel) resetWindow(now int64) { m.origin, m.curIdx, m.calls = now, 0, nil }

func (m *refModel) setState(s State) { m.state, m.gen = s, m.gen+1 }

func (m *refModel) allow(now int64) (refPermit, bool) {
	switch m.state {
	case Closed, ForcedClosed:
		return refPermit{gen: m.gen, start: now}, true
	case ForcedOpen:
		return refPermit{}, false
	case Open:
		if now < m.reopenAt {
			return refPermit{}, false
		}
		m.setState(HalfOpen)
		m.leases, m.admitted, m.succeeded = map[uint64]int64{}, 0, 0
	}
	for tok, deadline := range m.leases {
		if now >= deadline {
			delete(m.leases, tok)
			m.admitted--
		}
	}
	if m.admitted >= m.p.HalfOpenProbes {
		return refPermit{}, false
	}
	m.nextToken++
	m.leases[m.nextToken] = now + int64(m.p.ProbeLease)
	m.admitted++
	return refPermit{gen: m.gen, start: now, token: m.nextToken}, true
}

func (m *refModel) open(now int64, retryAfter time.Duration) {
	c := float64(m.p.Cooldown) * math.Pow(m.p.CooldownMultiplier, float64(m.failedProbes))
	wait := time.Duration(min(c, float64(m.p.MaxCooldown)))
	wait = max(wait, min(retryAfter, m.p.MaxRetryAfter))
	m.reopenAt = now + int64(wait)
	m.setState(Open)
}

func (m *refModel) report(pm refPermit, v Verdict, retryAfter time.Duration, now int64) {
	if pm.token == 0 && v == Ignore {
		return
	}
	slow := m.p.SlowCallThreshold > 0 && v != Ignore && now-pm.start >= int64(m.p.SlowCallThreshold)
	if pm.gen != m.gen {
		if v == Failure && retryAfter > 0 && m.state == Open {
			m.reopenAt = max(m.reopenAt, now+int64(min(retryAfter, m.p.MaxRetryAfter)))
		}
		return
	}
	if pm.token != 0 {
		if _, ok := m.leases[pm.token]; !ok {
			return
		}
		delete(m.leases, pm.token)
		switch {
		case v == Ignore:
			m.admitted--
		case v == Failure || slow:
			m.failedProbes++
			m.open(now, retryAfter)
		default:
			m.succeeded++
			if m.succeeded >= m.p.HalfOpenProbes {
				m.setState(Closed)
				m.resetWindow(now)
				m.failedProbes = 0
			}
		}
		return
	}
	m.slideTo(now)
	failed := v == Failure
	m.calls = append(m.calls, refCall{bucket: m.curIdx, failed: failed, slow: slow})
	if m.state != Closed || (!failed && !slow) {
		return
	}
	c := m.counts()
	if c.Calls < int64(m.p.MinimumCalls) {
		return
	}
	rate := func(n int64, thr float64) bool {
		return n*1e6 >= int64(math.Round(thr*1e6))*c.Calls
	}
	if failed && rate(c.Failures, m.p.FailureRateThreshold) || slow && rate(c.SlowCalls, m.p.SlowCallRateThreshold) {
		m.open(now, retryAfter)
	}
}

func (m *refModel) retryAfter(now int64) time.Duration {
	switch m.state {
	case Open:
		return time.Duration(max(0, m.reopenAt-now))
	case HalfOpen:
		if m.admitted < m.p.HalfOpenProbes || len(m.leases) == 0 {
			return 0
		}
		earliest := int64(math.MaxInt64)
		for _, d := range m.leases {
			earliest = min(earliest, d)
		}
		return time.Duration(max(0, earliest-now))
	}
	return 0
}

func TestAgreesWithReferenceModel(t *testing.T) {
	t.Parallel()
	policies := []Policy{
		{MinimumCalls: 5, Window: 10 * time.Second, Buckets: 5, Cooldown: 2 * time.Second, ProbeLease: 3 * time.Second},
		{MinimumCalls: 3, FailureRateThreshold: 0.34, Window: 4 * time.Second, Buckets: 4, Cooldown: time.Second,
			CooldownMultiplier: 2, MaxCooldown: 10 * time.Second, HalfOpenProbes: 3, ProbeLease: time.Second},
		{MinimumCalls: 4, Window: 6 * time.Second, Buckets: 3, SlowCallThreshold: 700 * time.Millisecond,
			SlowCallRateThreshold: 0.5, Cooldown: 1500 * time.Millisecond, HalfOpenProbes: 2, ProbeLease: 2 * time.Second},
		{MinimumCalls: 1, Window: time.Second, Buckets: 1, Cooldown: 10 * time.Millisecond, ProbeLease: 10 * time.Millisecond,
			MaxRetryAfter: time.Second},
	}
	for pi, p := range policies {
		for seed := range uint64(60) {
			t.Run(fmt.Sprintf("policy%d/seed%d", pi, seed), func(t *testing.T) {
				runAgainstModel(t, p, seed)
			})
		}
	}
}

func runAgainstModel(t *testing.T, p Policy, seed uint64) {
	p.Jitter = -1
	r := rand.New(rand.NewPCG(seed, 0xb7ea))
	fc := clock.NewFake(time.Time{})
	b := MustNew(Config{Name: "m", Clock: fc, Policy: p})
	m := newRefModel(b.Policy())
	m.resetWindow(0)
	type pair struct {
		real Permit
		ref  refPermit
	}
	var open []pair
	var log []string
	now := func() int64 { return b.toNanos(fc.Now()) }
	for step := range 400 {
		var op string
		switch k := r.IntN(100); {
		case k < 40:
			rp, err := b.Allow()
			mp, ok := m.allow(now())
			op = fmt.Sprintf("allow -> %v (model %v)", err == nil, ok)
			require.Equal(t, ok, err == nil, "step %d: %s\n%v", step, op, log)
			if ok {
				require.Equal(t, mp.token != 0, rp.IsProbe(), "step %d: probe?", step)
				open = append(open, pair{rp, mp})
			}
		case k < 75 && len(open) > 0:
			i := r.IntN(len(open))
			pr := open[i]
			open = append(open[:i], open[i+1:]...)
			v := []Verdict{Success, Success, Failure, Failure, Ignore}[r.IntN(5)]
			var ra time.Duration
			if v == Failure && r.IntN(4) == 0 {
				ra = time.Duration(r.IntN(5000)) * time.Millisecond
			}
			op = fmt.Sprintf("report %v ra=%v (probe %v)", v, ra, pr.ref.token != 0)
			pr.real.Report(Report{Verdict: v, RetryAfter: ra})
			m.report(pr.ref, v, ra, now())
		case k < 95:
			d := time.Duration(r.IntN(1500)) * time.Millisecond
			fc.Advance(d)
			op = fmt.Sprintf("advance %v", d)
		case k < 97:
			b.ForceOpen("")
			m.setState(ForcedOpen)
			op = "force open"
		case k < 98:
			b.ForceClosed("")
			m.setState(ForcedClosed)
			m.resetWindow(now())
			m.failedProbes = 0
			op = "force closed"
		default:
			b.Reset("")
			m.setState(Closed)
			m.resetWindow(now())
			m.failedProbes = 0
			op = "reset"
		}
		log = append(log, op)
		if len(log) > 12 {
			log = log[1:]
		}
		require.Equal(t, m.state, b.State(), "step %d after %s; recent: %v", step, op, log)
		require.Equal(t, m.retryAfter(now()), b.RetryAfter(), "step %d retry-after after %s; recent: %v", step, op, log)
		if m.state.Admits() {
			m.slideTo(now()) // a snapshot slides the window to now, as a measured call does
			require.Equal(t, m.counts(), b.Snapshot().Window, "step %d window after %s; recent: %v", step, op, log)
		}
	}
}
