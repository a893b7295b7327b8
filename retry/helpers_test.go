package retry_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/stretchr/testify/require"
)

// events collects attempt records.
type events struct {
	mu  sync.Mutex
	all []retry.Event
}

func (e *events) hook(_ context.Context, ev retry.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) list() []retry.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]retry.Event(nil), e.all...)
}

type rig struct {
	r     *retry.Retrier
	clk   *clock.Fake
	sleep *retry.FakeSleeper
	ev    *events
}

// newRig returns a Retrier on a fake clock whose sleeps advance the clock, with jitter
// fixed at one half, so delays are exact.
func newRig(t *testing.T, cfg retry.Config) *rig {
	t.Helper()
	fc := clock.NewFake(time.Time{})
	sl := &retry.FakeSleeper{Clock: fc}
	ev := &events{}
	cfg.Clock = fc
	cfg.Sleeper = sl
	if cfg.Rand == nil {
		cfg.Rand = func() float64 { return 0.5 }
	}
	cfg.OnAttempt = append(cfg.OnAttempt, ev.hook)
	if cfg.Budgets == nil {
		cfg.Budgets = retry.MustNewBudgets(retry.BudgetConfig{Clock: fc, Ratio: 1, MinRetriesPerSecond: 100})
	}
	r, err := retry.New(cfg)
	require.NoError(t, err)
	return &rig{r: r, clk: fc, sleep: sl, ev: ev}
}

// script answers attempts with the given classes in turn; the last one repeats.
type script struct {
	mu      sync.Mutex
	classes []classify.Classification
	calls   int
	keys    []string
	each    func(n int) // runs inside every attempt, when set
}

func answers(cs ...classify.Class) *script {
	s := &script{}
	for _, c := range cs {
		s.classes = append(s.classes, classify.ForClass(c))
	}
	return s
}

func (s *script) with(c classify.Classification) *script {
	s.classes = append(s.classes, c)
	return s
}

func (s *script) fn(ctx context.Context, a retry.Info) (classify.Classification, error) {
	s.mu.Lock()
	n := s.calls
	s.calls++
	s.keys = append(s.keys, retry.IdempotencyKeyFrom(ctx))
	c := s.classes[min(n, len(s.classes)-1)]
	each := s.each
	s.mu.Unlock()
	if each != nil {
		each(n)
	}
	return c, nil
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func runtimeYield() { runtime.Gosched() }
