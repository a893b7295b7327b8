package callbacks_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/plugin"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// The helpers below are copies of the library's callbacks tests' helpers (observer_test.go,
// release_test.go, recovery_test.go) used by the tests that moved here because they need a
// journal on a real database.

// observed is one report with what the context it came with says about the call.
type observed[T any] struct {
	v            T
	callID       string // the context's FunctionCallID; "" when it is no tool context
	invocationID string
}

// recorder is an observe.Calls that keeps every report, as the fixture's default
// Observer. It is safe for concurrent use.
type recorder struct {
	mu       sync.Mutex
	shorts   []observed[observe.ShortCircuit]
	calls    []observed[observe.Call]
	rejected []observed[string]
	other    int
}

var _ observe.Calls = (*recorder)(nil)

func from[T any](ctx context.Context, v T) observed[T] {
	o := observed[T]{v: v}
	if tc, ok := ctx.(agent.Context); ok {
		o.callID, o.invocationID = tc.FunctionCallID(), tc.InvocationID()
	}
	return o
}

func (r *recorder) ShortCircuit(ctx context.Context, s observe.ShortCircuit) {
	r.mu.Lock()
	r.shorts = append(r.shorts, from(ctx, s))
	r.mu.Unlock()
}

func (r *recorder) CallOutcome(ctx context.Context, c observe.Call) {
	r.mu.Lock()
	r.calls = append(r.calls, from(ctx, c))
	r.mu.Unlock()
}

func (r *recorder) BulkheadRejected(ctx context.Context, dep string) {
	r.mu.Lock()
	r.rejected = append(r.rejected, from(ctx, dep))
	r.mu.Unlock()
}

func (r *recorder) BreakerEvent(breaker.Event) {
	r.mu.Lock()
	r.other++
	r.mu.Unlock()
}

func (r *recorder) RetryBudgetExhausted(context.Context, string) {
	r.mu.Lock()
	r.other++
	r.mu.Unlock()
}

func mustPlugin(t *testing.T, cfg plugin.Config) *plugin.Plugin {
	t.Helper()
	p, err := plugin.New(cfg)
	require.NoError(t, err)
	return p
}

// trip opens b with four failures.
func trip(t *testing.T, b *breaker.Breaker) {
	t.Helper()
	for range 4 {
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	require.Equal(t, breaker.Open, b.State())
}
