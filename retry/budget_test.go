package retry_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/stretchr/testify/require"
)

func grants(b *retry.Budget, now time.Time, n int) int {
	got := 0
	for range n {
		if b.TryRetryAt(now) {
			got++
		}
	}
	return got
}

func TestBudgetRatio(t *testing.T) {
	tests := []struct {
		name     string
		cfg      retry.BudgetConfig
		requests int
		want     int
	}{
		{"ten percent of 100 plus the default floor of one", retry.BudgetConfig{}, 100, 11},
		{"ten percent of 100, no floor", retry.BudgetConfig{MinRetriesPerSecond: -1}, 100, 10},
		{"quiet dependency still retries once", retry.BudgetConfig{}, 1, 1},
		{"no traffic, no floor, no retries", retry.BudgetConfig{MinRetriesPerSecond: -1}, 0, 0},
		{"fraction rounds down", retry.BudgetConfig{MinRetriesPerSecond: -1}, 19, 1},
		{"floor scales with the window", retry.BudgetConfig{MinRetriesPerSecond: 1, Window: 5 * time.Second}, 0, 5},
		{"ratio one", retry.BudgetConfig{Ratio: 1, MinRetriesPerSecond: -1}, 7, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := clock.NewFake(time.Time{})
			tt.cfg.Clock = fc
			b, err := retry.NewBudget(tt.cfg)
			require.NoError(t, err)
			for range tt.requests {
				b.Request()
			}
			require.Equal(t, tt.want, grants(b, fc.Now(), 1000))
			s := b.Stats()
			require.EqualValues(t, tt.want, s.Granted)
			require.EqualValues(t, 1000-tt.want, s.Refused)
			require.EqualValues(t, tt.requests, s.WindowRequests)
		})
	}
}

func TestBudgetWindowSlides(t *testing.T) {
	fc := clock.NewFake(time.Time{})
	b, err := retry.NewBudget(retry.BudgetConfig{Clock: fc, MinRetriesPerSecond: -1})
	require.NoError(t, err)
	start := fc.Now()
	for range 100 {
		b.RequestAt(start)
	}
	require.Equal(t, 10, grants(b, start, 50))

	// Half a window later the old traffic still counts, and so do the retries spent.
	mid := start.Add(5 * time.Second)
	require.Equal(t, 0, grants(b, mid, 50))

	// Once the window has passed, old requests and old retries are both forgotten.
	later := start.Add(10 * time.Second)
	require.Equal(t, 0, grants(b, later, 50), "no traffic in the new window")
	for range 30 {
		b.RequestAt(later)
	}
	require.Equal(t, 3, grants(b, later, 50))
	st := b.StatsAt(later)
	require.EqualValues(t, 30, st.WindowRequests)
	require.EqualValues(t, 3, st.WindowRetries)
	require.EqualValues(t, 130, st.Requests)
}

func TestBudgetClockGoingBackErrsTowardFewerRetries(t *testing.T) {
	fc := clock.NewFake(time.Time{})
	b, err := retry.NewBudget(retry.BudgetConfig{Clock: fc, MinRetriesPerSecond: -1})
	require.NoError(t, err)
	now := fc.Now()
	for range 10 {
		b.RequestAt(now)
	}
	require.Equal(t, 1, grants(b, now, 5))
	// The clock steps back 3s: the retry spent "in the future" still counts.
	require.Equal(t, 0, grants(b, now.Add(-3*time.Second), 5))
}

func TestBudgetsShareOneBudgetPerDependency(t *testing.T) {
	fc := clock.NewFake(time.Time{})
	bs := retry.MustNewBudgets(retry.BudgetConfig{Clock: fc, MaxDependencies: 2})
	a1, err := bs.For("crm")
	require.NoError(t, err)
	a2, err := bs.For("crm")
	require.NoError(t, err)
	require.Same(t, a1, a2)
	_, err = bs.For("mail")
	require.NoError(t, err)

	_, err = bs.For("third")
	require.ErrorIs(t, err, retry.ErrTooManyDependencies)
	require.ErrorContains(t, err, `dependency "third" would be budget number 3 (MaxDependencies 2)`)

	_, err = bs.For("")
	var ce *retry.ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "Operation.Dependency", ce.Field)
}

func TestBudgetConcurrentCallersNeverOverspend(t *testing.T) {
	fc := clock.NewFake(time.Time{})
	b, err := retry.NewBudget(retry.BudgetConfig{Clock: fc})
	require.NoError(t, err)
	for range 500 {
		b.Request()
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 16 {
		wg.Go(func() {
			n := grants(b, fc.Now(), 100)
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Equal(t, 51, total) // 10% of 500, plus one from the floor
}
