package classify_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
)

func newBreaker(t *testing.T, clk clock.Clock) *breaker.Breaker {
	t.Helper()
	return breaker.MustNew(breaker.Config{Name: "crm", Clock: clk,
		Policy: breaker.Policy{MinimumCalls: 2, FailureRateThreshold: 0.5, Cooldown: 30 * time.Second, Jitter: -1}})
}

// Execute counts what the dependency did: timeouts trip the breaker, the caller's
// own cancellation and a 404 do not, and an open breaker does not run the function.
func TestExecuteClassifiesAndReports(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	b := newBreaker(t, clk)
	ctx := context.Background()
	notFound := genai.APIError{Code: http.StatusNotFound, Status: "NOT_FOUND"}

	for range 2 { // a 404 proves the CRM is up; the caller's cancellation is not its fault
		require.Equal(t, error(notFound), classify.Execute(ctx, b, func(context.Context) error { return notFound }))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_ = classify.Execute(cancelled, b, func(ctx context.Context) error { return ctx.Err() })
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, breaker.Counts{Calls: 2}, b.Snapshot().Window)

	timeout := context.DeadlineExceeded
	for range 2 {
		_ = classify.Execute(ctx, b, func(context.Context) error { return timeout })
	}
	require.Equal(t, breaker.Open, b.State())

	ran := false
	err := classify.Execute(ctx, b, func(context.Context) error { ran = true; return nil })
	require.False(t, ran, "an open breaker must not run the function")
	require.ErrorIs(t, err, breaker.ErrOpen)
	var open *breaker.OpenError
	require.ErrorAs(t, err, &open)
}

// A nil breaker is what the dependency map returns for an exempt tool: the call runs
// unguarded instead of panicking.
func TestExecuteWithNilBreakerRunsTheCall(t *testing.T) {
	want := errors.New("boom")
	require.Equal(t, want, classify.Execute(context.Background(), nil, func(context.Context) error { return want }))
}

// A panicking probe gives its permit back, so the breaker can probe again.
func TestExecutePanicReleasesTheProbe(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	b := newBreaker(t, clk)
	b.ForceOpen("test")
	b.Reset("test")
	for range 2 {
		_ = classify.Execute(context.Background(), b, func(context.Context) error { return context.DeadlineExceeded })
	}
	require.Equal(t, breaker.Open, b.State())
	clk.Advance(31 * time.Second)
	require.Panics(t, func() {
		_ = classify.Execute(context.Background(), b, func(context.Context) error { panic("bug in the caller") })
	})
	require.Zero(t, b.Snapshot().ProbesInFlight, "the panicking probe still holds its lease")
	require.NoError(t, classify.Execute(context.Background(), b, func(context.Context) error { return nil }))
	require.Equal(t, breaker.Closed, b.State())
}
