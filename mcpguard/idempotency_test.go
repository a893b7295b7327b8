package mcpguard_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/internal/mcptest"
	"github.com/agentbreaker/agentbreaker/mcpguard"
	"github.com/agentbreaker/agentbreaker/retry"
)

// withRetry gives the plugin a Retrier (the operations, and so their keys) whose
// budget lets the test's few retries through.
func withRetry(c *callbacks.Config) {
	c.SideEffects.Retry = retry.MustNew(retry.Config{Budgets: retry.MustNewBudgets(retry.BudgetConfig{MinRetriesPerSecond: 10})})
}

// The fixture's server reads the key under the name a server author would write.
func TestIdempotencyKeyMetaIsTheDocumentedName(t *testing.T) {
	require.Equal(t, "io.github.agentbreaker/idempotency-key", mcpguard.IdempotencyKeyMeta)
	require.Equal(t, mcptest.KeyMeta, mcpguard.IdempotencyKeyMeta)
}

// Issue 48 (3): the tools mcpguard lists could not be wrapped with the plugin's
// idempotency-key wrapper, so no key reached an MCP server. Now a mutating call carries
// its operation's key in the request's _meta, over streamable HTTP and over an
// in-process connection; the model's re-issue of the same charge in the same turn is
// the same operation and carries the same key; a read-only call carries none; a call
// in a later turn is another operation, with another key.
func TestMutationSendsItsIdempotencyKeyInMeta(t *testing.T) {
	for _, transport := range []string{"streamable_http", "in_memory"} {
		t.Run(transport, func(t *testing.T) {
			srv := mcptest.NewServer()
			cfg := rigConfig{cb: withRetry}
			if transport == "streamable_http" {
				cfg.endpoint = mcptest.NewHTTP(t, srv).URL()
			} else {
				clientT, serverT := mcp.NewInMemoryTransports()
				ss, err := srv.MCP.Connect(context.Background(), serverT, nil)
				require.NoError(t, err)
				t.Cleanup(func() { ss.Wait() })
				cfg.transport = clientT
			}
			// The first charge fails with a 503 in its answer (FAILED: nothing was
			// applied, and it may be retried), the model re-issues it, and it goes
			// through.
			cfg.steps = []breakertest.Step{order(), charge(), charge(), breakertest.Text("done")}
			r := newRig(t, cfg)
			var calls atomic.Int32
			srv.Set(mcptest.Charge, func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error) {
				if calls.Add(1) == 1 {
					return mcptest.IsError(`{"status_code": 503, "error": "unavailable"}`)(ctx, args)
				}
				return nil, nil // the normal answer: the charge is applied
			})
			turn := r.turn()
			require.Len(t, responses(turn)["charge_card"], 2)
			require.Equal(t, 1, srv.Charges())

			keys := srv.Keys(mcptest.Charge)
			require.Len(t, keys, 2)
			require.NotEmpty(t, keys[0], "the mutation carries a key in _meta")
			require.Equal(t, keys[0], keys[1], "the re-issue of the same operation carries the same key")
			require.Equal(t, []string{""}, srv.Keys(mcptest.Order), "a read-only call carries none")

			r.withSteps(t, charge(), breakertest.Text("done"))
			r.turn()
			keys = srv.Keys(mcptest.Charge)
			require.Len(t, keys, 3)
			require.NotEmpty(t, keys[2])
			require.NotEqual(t, keys[0], keys[2], "another turn's call is another operation")
		})
	}
}

// A server that asks for input (SEP-2322) gets the call twice: both sends carry the
// same key, so it can tell the second from a new charge.
func TestMutationAskingForInputSendsTheSameKeyTwice(t *testing.T) {
	srv := mcptest.NewServer()
	srv.ConfirmCharges()
	h := mcptest.NewHTTP(t, srv)
	client := mcp.NewClient(&mcp.Implementation{Name: "cashier", Version: "v1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	})
	r := newRig(t, rigConfig{cb: withRetry, steps: []breakertest.Step{charge(), breakertest.Text("done")}, guard: func(c *mcpguard.Config) {
		c.Toolset = mcptoolset.Config{Endpoint: h.URL(), Client: client}
	}})
	r.turn()
	keys := srv.Keys(mcptest.Charge)
	require.Len(t, keys, 2)
	require.NotEmpty(t, keys[0])
	require.Equal(t, keys[0], keys[1])
	require.Equal(t, 1, srv.Charges())
}

// Without a Retrier there is no operation and no key: nothing is added to _meta.
func TestMutationWithoutRetrierSendsNoKey(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	r := newRig(t, rigConfig{endpoint: h.URL(), steps: []breakertest.Step{charge(), breakertest.Text("done")}})
	r.turn()
	require.Equal(t, []string{""}, srv.Keys(mcptest.Charge))
	require.Equal(t, 1, srv.Charges())
}
