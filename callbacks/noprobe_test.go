package callbacks_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
)

// TestAMutationIsNeverTheProbe (issue 24b): after a payments outage the cooldown is
// over and the model calls charge_card first. Before, that call was the probe: the
// customer's charge went to a dependency that failed a minute ago. Now it is answered
// unavailable without reaching the tool, the breaker stays open, and the read-only
// get_balance of the same dependency is the probe that closes it; then charge_card
// goes through.
func TestAMutationIsNeverTheProbe(t *testing.T) {
	t.Parallel()
	var charges, balances atomic.Int32
	charge := callbackstest.FnTool(t, "charge_card", func(agent.Context, map[string]any) (map[string]any, error) {
		charges.Add(1)
		return map[string]any{"charged": true}, nil
	})
	balance := callbackstest.FnTool(t, "get_balance", func(agent.Context, map[string]any) (map[string]any, error) {
		balances.Add(1)
		return map[string]any{"balance": 10}, nil
	})
	var next atomic.Value
	next.Store("charge_card")
	f := callbackstest.New(t, callbackstest.Config{
		Tools:     []tool.Tool{charge, balance},
		Deps:      map[string]dependencymap.Dependency{"payments": {Tools: []string{"charge_card", "get_balance"}}},
		Callbacks: callbacks.Config{SideEffects: callbacks.SideEffects{MutatingTools: []string{"charge_card"}}},
		Then: func(r breakertest.Request) breakertest.Step {
			if len(r.FunctionResponses()) > 0 {
				return breakertest.Text("done")
			}
			return breakertest.Call(next.Load().(string), map[string]any{})
		},
	})
	b := f.Breaker(t, "payments")
	callbackstest.Trip(t, b)
	f.Clock.Advance(30 * time.Second) // the cooldown is over

	turn := f.Run(t, "charge the card")
	require.Zero(t, charges.Load(), "the mutation did not reach the dependency")
	resp := turn.FunctionResponses()[0].Response
	require.Equal(t, "unavailable", resp["status"], "%v", resp)
	require.Equal(t, breaker.Open, b.State(), "the mutation did not end the open period")
	require.Len(t, f.Events.Of(callbacks.EventShortCircuit), 1)

	next.Store("get_balance")
	f.Run(t, "what is the balance")
	require.Equal(t, int32(1), balances.Load(), "the read-only call was the probe")
	require.Equal(t, breaker.Closed, b.State())

	next.Store("charge_card")
	f.Run(t, "charge the card")
	require.Equal(t, int32(1), charges.Load(), "closed: the mutation goes through")
	f.RequireClean(t)
}
