package callbacks_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

type orderArgs struct {
	OrderID int `json:"order_id"`
}

// Issue 12a: arguments that fail functiontool's schema validation never reached the
// dependency; six of them must not open its breaker.
func TestSchemaRejectedArgumentsDoNotCount(t *testing.T) {
	t.Parallel()
	var handled atomic.Int64
	lookup, err := functiontool.New(functiontool.Config{Name: "get_order", Description: "Gets an order."},
		func(_ agent.Context, a orderArgs) (map[string]any, error) {
			handled.Add(1)
			return map[string]any{"status": "ok", "order_id": a.OrderID}, nil
		})
	require.NoError(t, err)
	f := newFixture(t, fixtureConfig{
		tools: []tool.Tool{lookup},
		// The model gets the type of order_id wrong every time.
		then: func(r breakertest.Request) breakertest.Step {
			if len(r.FunctionResponses()) > 0 {
				return breakertest.Text("done")
			}
			return breakertest.Call("get_order", map[string]any{"order_id": "A-17"})
		},
		deps: map[string]dependencymap.Dependency{"orders": {Tools: []string{"get_order"}}},
	})
	for range 6 {
		f.run(t, "where is my order")
	}
	require.Zero(t, handled.Load(), "the handler must never have run")
	b := f.breaker(t, "orders")
	require.Equal(t, breaker.Closed, b.State())
	require.Zero(t, b.Snapshot().Window.Failures, "schema rejections counted against the dependency")
	outcomes := f.ev.of(callbacks.EventCallOutcome)
	require.Len(t, outcomes, 6)
	for _, e := range outcomes {
		require.Equal(t, classify.ClassValidation, e.Class)
		require.Equal(t, classify.Neutral, e.Verdict)
		require.Equal(t, classify.FailedBeforeSend, e.Outcome)
	}
	f.requireClean(t)
}
