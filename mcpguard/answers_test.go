package mcpguard_test

// Issue 22 (c, d) through MCP: what a healthy server answers reaches the model and
// does not count; a failure it reports in structured content counts; hostile text in
// an isError result stays out of the logs and reaches the model cleaned and bounded.
// These rely on the classify and callbacks rules of the answer boundary.

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/hostiletest"
	"github.com/agentbreaker/agentbreaker/internal/mcptest"
	"github.com/agentbreaker/agentbreaker/internal/syncbuf"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// answerOf returns the one function response of tool in a turn, as JSON.
func answerOf(t *testing.T, turn *breakertest.Turn, tool string) string {
	t.Helper()
	got := responses(turn)[tool]
	require.Len(t, got, 1)
	b, err := json.Marshal(got[0])
	require.NoError(t, err)
	return string(b)
}

func TestFiftyBusinessRefusalsDoNotTrip(t *testing.T) {
	t.Run("streamable_http", func(t *testing.T) {
		srv := mcptest.NewServer()
		srv.Set(mcptest.Charge, mcptest.IsError("card_declined: The card was declined."))
		r := newRig(t, rigConfig{endpoint: mcptest.NewHTTP(t, srv).URL(), then: oneCallPerTurn(charge())})
		fiftyRefusals(t, r)
		require.Equal(t, 50, srv.Calls(mcptest.Charge), "every call reached the server")
	})
	t.Run("stdio", func(t *testing.T) {
		log := t.TempDir() + "/calls"
		r := newRig(t, rigConfig{transport: commandTransport(mcptest.StdioIsError, log), then: oneCallPerTurn(charge())})
		fiftyRefusals(t, r)
		require.Equal(t, 50, mcptest.LoggedCalls(log), "every call reached the server")
	})
}

func fiftyRefusals(t *testing.T, r *rig) {
	t.Helper()
	for i := range 50 {
		a := answerOf(t, r.turn(), "charge_card")
		require.Contains(t, a, "The card was declined.", "turn %d", i)
		require.NotContains(t, a, payloads.TypeOutcomeUnknown, "the server answered: not ambiguous")
	}
	require.Equal(t, breaker.Closed, r.state())
	out := r.events.of(callbacks.EventCallOutcome)
	require.Len(t, out, 50)
	for _, e := range out {
		require.Equal(t, classify.Failed, e.Outcome)
		require.NotEqual(t, classify.Counts, e.Verdict)
	}
}

func TestFiftyArgumentMistakesDoNotTrip(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	srv.Set(mcptest.Order, mcptest.IsError("invalid argument: order_id must be numeric"))
	r := newRig(t, rigConfig{endpoint: h.URL(), then: oneCallPerTurn(order())})
	for range 50 {
		require.Contains(t, answerOf(t, r.turn(), "get_order"), "order_id must be numeric")
	}
	require.Equal(t, breaker.Closed, r.state())
	require.Equal(t, 50, srv.Calls(mcptest.Order))
	require.Empty(t, r.events.of(callbacks.EventShortCircuit))
}

// A failure the server reports in structured content ({"status_code": 503}) counts,
// and its text stays withheld.
func TestStructuredContentFailureCounts(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	srv.Set(mcptest.Order, mcptest.Structured(map[string]any{"status_code": 503, "message": "upstream ledger-db-7 down"}))
	r := newRig(t, rigConfig{endpoint: h.URL(), then: oneCallPerTurn(order())})
	for range 4 {
		require.NotContains(t, answerOf(t, r.turn(), "get_order"), "ledger-db-7", "an outage's text is withheld")
	}
	for _, e := range r.events.of(callbacks.EventCallOutcome) {
		require.Equal(t, classify.Counts, e.Verdict, "%+v", e)
		require.Equal(t, classify.Failed, e.Outcome, "the server answered")
		require.Equal(t, classify.Class("http_5xx"), e.Class)
	}
	require.Equal(t, breaker.Open, r.state())
}

// An isError on a mutation is FAILED: the server answered. The model is not told
// "outcome unknown", and the same charge in the next turn goes through.
func TestMutationIsErrorIsFailedAndRetryGoesThrough(t *testing.T) {
	srv := mcptest.NewServer()
	h := mcptest.NewHTTP(t, srv)
	srv.Set(mcptest.Charge, mcptest.IsError("card_declined: The card was declined."))
	r := newRig(t, rigConfig{endpoint: h.URL(), then: oneCallPerTurn(charge())})
	first := answerOf(t, r.turn(), "charge_card")
	require.Contains(t, first, "declined")
	require.NotContains(t, first, payloads.TypeOutcomeUnknown)
	out := r.events.of(callbacks.EventCallOutcome)
	require.Len(t, out, 1)
	require.Equal(t, classify.Failed, out[0].Outcome)
	srv.Set(mcptest.Charge, mcptest.OK())
	require.Contains(t, answerOf(t, r.turn(), "charge_card"), "ch_1")
	require.Equal(t, 1, srv.Charges())
}

// secretShapes are the corpus entries whose marker sits inside a secret: it must not
// reach the model either. The other entries' text may (a dependency's answer is shown
// to the model cleaned and bounded, identifiers and words included).
var secretShapes = map[string]bool{"dsn password": true, "aws key": true, "bearer": true, "private key": true, "jwt": true, "card and email": true}

// The hostile corpus as isError text of an MCP server: nothing of it reaches the logs
// (a fingerprint only), and what reaches the model is valid UTF-8, free of escapes and
// control characters, bounded, with secrets masked.
func TestHostileIsErrorText(t *testing.T) {
	for _, tt := range hostiletest.Corpus {
		t.Run(tt.Name, func(t *testing.T) {
			srv := mcptest.NewServer()
			h := mcptest.NewHTTP(t, srv)
			srv.Set(mcptest.Charge, mcptest.IsError(tt.Body))
			var logs syncbuf.Buffer
			r := newRig(t, rigConfig{endpoint: h.URL(), then: oneCallPerTurn(charge()), cb: func(c *callbacks.Config) {
				c.Observability.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}})
			a := answerOf(t, r.turn(), "charge_card")
			var shown map[string]any
			require.NoError(t, json.Unmarshal([]byte(a), &shown))
			text, _ := shown["error"].(string)
			if text == "" {
				text = a // agentbreaker's payload: the text was withheld
			}
			require.True(t, utf8.ValidString(text))
			for _, r := range text {
				require.False(t, r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r == '\u202e', "control character %U in %q", r, text)
			}
			require.Less(t, len(text), 4096, "bounded")
			if secretShapes[tt.Name] {
				require.NotContains(t, strings.ToLower(text), hostiletest.Marker, "a secret reached the model: %q", text)
				require.NotContains(t, text, "4111 1111 1111 1111")
			}
			logged := logs.String()
			require.NotEmpty(t, logged)
			require.Empty(t, hostiletest.Leaks(logged), "the server's text reached the logs")
			require.NotContains(t, logged, `\u001b`)
			require.Less(t, len(logged), 64<<10)
		})
	}
}

// oneCallPerTurn answers each turn's first request with step and the next with text.
func oneCallPerTurn(step breakertest.Step) func(breakertest.Request) breakertest.Step {
	return func(req breakertest.Request) breakertest.Step {
		if len(req.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		return step
	}
}
