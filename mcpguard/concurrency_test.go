package mcpguard_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/mcptest"
)

// Parallel mutations in one model response are separate logical calls: each is sent
// once, none is refused for another's send.
func TestParallelMutationsAreEachSentOnce(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	calls := make([]*genai.FunctionCall, 3)
	for i := range calls {
		calls[i] = &genai.FunctionCall{Name: mcptest.Charge, Args: map[string]any{"card": "4242", "amount": float64(i + 1)}}
	}
	r := newRig(t, rigConfig{endpoint: h.URL(), steps: []breakertest.Step{breakertest.Calls(calls...), breakertest.Text("done")}})
	h.CloseAfterAccept(mcptest.Charge, -1)
	r.turn()
	require.Equal(t, 3, h.Requests(mcptest.Charge), "three calls, three requests, no resend")
	out := r.events.of(callbacks.EventCallOutcome)
	require.Len(t, out, 3)
	for _, e := range out {
		require.Equal(t, classify.Unknown, e.Outcome)
	}
}

// Concurrent turns list and call through one tool set; run under -race.
func TestConcurrentTurns(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	r := newRig(t, rigConfig{endpoint: h.URL(), then: oneCallPerTurn(breakertest.Calls(
		&genai.FunctionCall{Name: mcptest.Order, Args: map[string]any{"order_id": "A1"}},
		&genai.FunctionCall{Name: mcptest.Charge, Args: map[string]any{"card": "4242", "amount": 1.0}},
	))})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				r.turn()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 20, srv.Charges())
	require.Equal(t, 20, srv.Calls(mcptest.Order))
	require.Len(t, r.events.of(callbacks.EventCallOutcome), 40)
	require.Equal(t, int64(0), r.cb.Stats().InFlight)
}
