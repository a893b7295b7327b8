package breaker

import (
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/stretchr/testify/require"
)

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) listen(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

func (r *recorder) reasons() []string {
	var out []string
	for _, e := range r.all() {
		out = append(out, e.From.String()+"->"+e.To.String()+": "+e.Reason)
	}
	return out
}

// newTest returns a breaker on a fake clock with jitter off unless the policy sets it.
func newTest(t testing.TB, p Policy) (*Breaker, *clock.Fake, *recorder) {
	t.Helper()
	if p.Jitter == 0 {
		p.Jitter = -1
	}
	fc := clock.NewFake(time.Time{})
	rec := &recorder{}
	b, err := New(Config{Name: "crm", Policy: p, Clock: fc, OnStateChange: []func(Event){rec.listen}})
	require.NoError(t, err)
	return b, fc, rec
}

// call makes one call with the given verdict and fails the test if it was rejected.
func call(t testing.TB, b *Breaker, v Verdict) {
	t.Helper()
	p, err := b.Allow()
	require.NoError(t, err)
	p.Report(Report{Verdict: v})
}

// calls makes n calls with the given verdict.
func calls(t testing.TB, b *Breaker, n int, v Verdict) {
	t.Helper()
	for range n {
		call(t, b, v)
	}
}

// trip opens b with the minimum number of failures.
func trip(t testing.TB, b *Breaker) {
	t.Helper()
	calls(t, b, b.Policy().MinimumCalls, Failure)
	require.Equal(t, Open, b.State())
}
