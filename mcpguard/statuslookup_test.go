package mcpguard_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/internal/mcptest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/mcpguard"
)

// Issue 48 (3): a StatusLookup for an mcpguard dependency had nothing to query. The
// lookup asks the same server, through its read-only status tool, about the key the
// mutation carried: applied for a charge the server applied, not applied for a key it
// never saw.
func TestStatusLookupAsksTheServerByKey(t *testing.T) {
	srv := mcptest.NewServer()
	srv.AddStatus()
	h := mcptest.NewHTTP(t, srv)
	r := newRig(t, rigConfig{endpoint: h.URL(), cb: withRetry, steps: []breakertest.Step{charge(), breakertest.Text("done")}})
	r.turn()
	keys := srv.Keys(mcptest.Charge)
	require.Len(t, keys, 1)
	require.NotEmpty(t, keys[0])

	lookup, err := mcpguard.StatusLookup(mcptoolset.Config{Endpoint: h.URL()}, mcptest.Status)
	require.NoError(t, err)
	ctx := t.Context()
	got, err := lookup(ctx, journal.Intent{Dependency: "payments", Tool: mcptest.Charge, IdempotencyKey: keys[0]})
	require.NoError(t, err)
	require.Equal(t, journal.StatusApplied, got)
	got, err = lookup(ctx, journal.Intent{Dependency: "payments", Tool: mcptest.Charge, IdempotencyKey: "NEVERSENT"})
	require.NoError(t, err)
	require.Equal(t, journal.StatusNotApplied, got)
	require.Equal(t, []string{keys[0], "NEVERSENT"}, srv.Keys(mcptest.Status), "the key is in the lookup's _meta too")
}

// What the lookup cannot read is unknown, with an error that holds nothing of the
// server's text; the intent then waits for an operator.
func TestStatusLookupAnswersUnknownWhenItCannotTell(t *testing.T) {
	srv := mcptest.NewServer()
	srv.AddStatus()
	h := mcptest.NewHTTP(t, srv)
	lookup, err := mcpguard.StatusLookup(mcptoolset.Config{Endpoint: h.URL()}, mcptest.Status)
	require.NoError(t, err)
	in := journal.Intent{Dependency: "payments", Tool: mcptest.Charge, IdempotencyKey: "K1"}
	tests := []struct {
		name    string
		answer  mcptest.Answer
		wantErr string
	}{
		{"isError", mcptest.IsError("secret-ish server words"), `"charge_status" answered with an error`},
		{"another word", mcptest.Structured(map[string]any{"status": "maybe"}), `answered neither "applied", "not_applied" nor "unknown"`},
		{"unknown, said so", mcptest.Structured(map[string]any{"status": "unknown"}), ""},
		{"text", func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "applied\n"}}}, nil
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.Set(mcptest.Status, tt.answer)
			got, err := lookup(t.Context(), in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.NotContains(t, err.Error(), "secret-ish")
				require.Equal(t, journal.StatusUnknown, got)
				return
			}
			require.NoError(t, err)
			if tt.name == "text" {
				require.Equal(t, journal.StatusApplied, got)
			} else {
				require.Equal(t, journal.StatusUnknown, got)
			}
		})
	}
	t.Run("no such tool", func(t *testing.T) {
		other, err := mcpguard.StatusLookup(mcptoolset.Config{Endpoint: h.URL()}, "no_such_tool")
		require.NoError(t, err)
		got, err := other(t.Context(), in)
		require.Error(t, err)
		require.Equal(t, journal.StatusUnknown, got)
	})
	t.Run("no key", func(t *testing.T) {
		got, err := lookup(t.Context(), journal.Intent{Dependency: "payments"})
		require.ErrorContains(t, err, "the intent has no idempotency key")
		require.Equal(t, journal.StatusUnknown, got)
	})
	t.Run("server down", func(t *testing.T) {
		h.Down()
		got, err := lookup(t.Context(), in)
		require.Error(t, err)
		require.Equal(t, journal.StatusUnknown, got)
	})
}

func TestStatusLookupRejectsWhatCannotWork(t *testing.T) {
	mem, _ := mcp.NewInMemoryTransports()
	tests := []struct {
		name    string
		ts      mcptoolset.Config
		tool    string
		wantErr string
	}{
		{"no tool", mcptoolset.Config{Endpoint: "http://127.0.0.1:1/mcp"}, "", `StatusLookup tool = "": required`},
		{"stdio", mcptoolset.Config{Transport: &mcp.CommandTransport{Command: exec.Command("true")}}, "charge_status",
			"Transport = *mcp.CommandTransport: connects only once"},
		{"in memory", mcptoolset.Config{Transport: mem}, "charge_status", "Transport = *mcp.InMemoryTransport: connects only once"},
		{"no transport", mcptoolset.Config{}, "charge_status", "one is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := mcpguard.StatusLookup(tt.ts, tt.tool)
			require.ErrorContains(t, err, tt.wantErr)
			require.Nil(t, l)
		})
	}
}
