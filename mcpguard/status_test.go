package mcpguard_test

// Issue 36 (c): an MCP server's HTTP status, as mcpguard's transport sees it on a
// streamable HTTP answer, is classified as for an HTTP tool. The server is the SDK's
// own, behind a handler that answers tools/call (or tools/list) with a chosen status
// the way a proxy or an overloaded server in front of it does.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/mcptest"
	"github.com/agentbreaker/agentbreaker/internal/syncbuf"
	"github.com/agentbreaker/agentbreaker/mcpguard"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// statusFront serves the SDK's MCP server over streamable HTTP, and answers the POSTs
// of one JSON-RPC method with a status of the test's choosing instead, counting what
// reached it.
type statusFront struct {
	url string

	mu         sync.Mutex
	method     string // "tools/call" or "tools/list"; "" passes everything through
	status     int
	retryAfter string
	calls      map[string]int // tools/call POSTs received, by tool
}

const frontBody = "upstream ledger-db-7 overloaded zq9" // what the model must never read

func newStatusFront(t *testing.T) (*statusFront, *mcptest.Server) {
	t.Helper()
	srv := mcptest.NewServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.MCP }, &mcp.StreamableHTTPOptions{Stateless: true})
	f := &statusFront{calls: map[string]int{}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &msg)
			f.mu.Lock()
			if msg.Method == "tools/call" {
				f.calls[msg.Params.Name]++
			}
			status, retryAfter := 0, f.retryAfter
			if f.method != "" && msg.Method == f.method {
				status = f.status
			}
			f.mu.Unlock()
			if status != 0 {
				if retryAfter != "" {
					w.Header().Set("Retry-After", retryAfter)
				}
				http.Error(w, frontBody, status)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Release()
		ts.CloseClientConnections()
		ts.Close()
	})
	f.url = ts.URL + "/mcp"
	return f, srv
}

func (f *statusFront) answer(method string, status int, retryAfter string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.method, f.status, f.retryAfter = method, status, retryAfter
}

func (f *statusFront) callsOf(tool string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[tool]
}

// TestMCPHTTPStatusIsClassifiedAsForHTTPTools answers a read-only tool's call with
// each status and reads what the model got and what the breaker was told: the class,
// outcome and verdict an HTTP tool's status gets, the reason that names it, the
// Retry-After delay, one request at the server, and none of the body's words.
func TestMCPHTTPStatusIsClassifiedAsForHTTPTools(t *testing.T) {
	tests := []struct {
		status     int
		retryAfter string
		class      classify.Class
		outcome    classify.Outcome
		verdict    classify.Verdict
		reason     string
		delay      float64
	}{
		{status: 503, retryAfter: "120", class: classify.ClassHTTP5xx, outcome: classify.Failed, verdict: classify.Counts, reason: "it has been returning server errors", delay: 120},
		{status: 500, class: classify.ClassHTTP5xx, outcome: classify.Unknown, verdict: classify.Counts, reason: "it has been returning server errors"},
		{status: 502, class: classify.ClassHTTP5xx, outcome: classify.Unknown, verdict: classify.Counts, reason: "it has been returning server errors"},
		{status: 504, class: classify.ClassHTTP5xx, outcome: classify.Unknown, verdict: classify.Counts, reason: "it has been returning server errors"},
		{status: 429, retryAfter: "45", class: classify.ClassHTTP429, outcome: classify.Failed, verdict: classify.Counts, reason: "it is limiting how many requests it accepts", delay: 45},
		{status: 408, class: classify.ClassHTTP408, outcome: classify.Failed, verdict: classify.Counts, reason: "recent requests to it timed out"},
		{status: 401, class: classify.ClassAuth, outcome: classify.Failed, verdict: classify.Healthy, reason: "it is rejecting our credentials"},
		{status: 403, class: classify.ClassAuth, outcome: classify.Failed, verdict: classify.Healthy, reason: "it is rejecting our credentials"},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			t.Parallel()
			front, _ := newStatusFront(t)
			front.answer("tools/call", tt.status, tt.retryAfter)
			r := newRig(t, rigConfig{endpoint: front.url, then: oneCallPerTurn(order())})
			turn := r.turn()
			got := responses(turn)["get_order"]
			require.Len(t, got, 1)
			p := got[0]
			require.Equal(t, payloads.TypeFailed, p["response_type"], "%v", p)
			require.Equal(t, string(tt.class), p["error_class"])
			require.Contains(t, p["reason"], tt.reason)
			if tt.delay > 0 {
				require.EqualValues(t, tt.delay, p["retry_after_seconds"], "the Retry-After header is the delay")
			}
			b, err := json.Marshal(p)
			require.NoError(t, err)
			require.NotContains(t, string(b), "zq9", "the answer's body never reaches the model")
			require.Equal(t, 1, front.callsOf("get_order"), "sent once: a status is not resent")

			outcomes := r.events.of(callbacks.EventCallOutcome)
			require.Len(t, outcomes, 1)
			e := outcomes[0]
			require.Equal(t, tt.class, e.Class)
			require.Equal(t, tt.outcome, e.Outcome)
			require.Equal(t, tt.verdict, e.Verdict)
			require.Equal(t, tt.status, e.StatusCode)
		})
	}
}

// TestMCP503OpensTheBreakerAnd401DoesNot: a server behind a proxy that answers 503
// trips the breaker as an HTTP API would, and the model is then told the server is
// unavailable because it has been returning server errors; a 401 is our credentials,
// which never trip (and is said once in the log as a configuration fault).
func TestMCP503OpensTheBreakerAnd401DoesNot(t *testing.T) {
	t.Run("503", func(t *testing.T) {
		t.Parallel()
		front, _ := newStatusFront(t)
		front.answer("tools/call", http.StatusServiceUnavailable, "")
		r := newRig(t, rigConfig{endpoint: front.url, then: oneCallPerTurn(order())})
		for range defaultPolicy.MinimumCalls {
			r.turn()
		}
		require.Equal(t, breaker.Open, r.state())
		p := responses(r.turn())["get_order"]
		require.Len(t, p, 1)
		require.Equal(t, payloads.TypeUnavailable, p[0]["response_type"])
		require.Contains(t, p[0]["reason"], "it has been returning server errors")
		require.Equal(t, int(defaultPolicy.MinimumCalls), front.callsOf("get_order"), "the open breaker sent nothing")
	})
	t.Run("401", func(t *testing.T) {
		t.Parallel()
		front, _ := newStatusFront(t)
		front.answer("tools/call", http.StatusUnauthorized, "")
		logs := &syncbuf.Buffer{}
		r := newRig(t, rigConfig{endpoint: front.url, then: oneCallPerTurn(order()), cb: func(c *callbacks.Config) {
			c.Observability.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		}})
		for range 20 {
			r.turn()
		}
		require.Equal(t, breaker.Closed, r.state())
		require.Equal(t, 20, front.callsOf("get_order"))
		require.Len(t, r.events.of(callbacks.EventConfigFault), 1, "said once, not once per call")
		require.Contains(t, logs.String(), `"event":"config_fault"`)
	})
}

// TestMCPMutationFollowsTheRuleFor5xx: for a mutating tool a 503 is FAILED (the
// server refused the work: the model's next call is sent), any other 5xx is UNKNOWN
// (it may have been applied: the model is told so, and the call is sent once).
func TestMCPMutationFollowsTheRuleFor5xx(t *testing.T) {
	t.Run("503 is FAILED", func(t *testing.T) {
		t.Parallel()
		front, srv := newStatusFront(t)
		front.answer("tools/call", http.StatusServiceUnavailable, "")
		r := newRig(t, rigConfig{endpoint: front.url, then: oneCallPerTurn(charge())})
		p := responses(r.turn())["charge_card"]
		require.Len(t, p, 1)
		require.Equal(t, payloads.TypeFailed, p[0]["response_type"], "%v", p[0])
		require.Equal(t, "http_5xx", p[0]["error_class"])
		front.answer("", 0, "")
		p = responses(r.turn())["charge_card"]
		require.Len(t, p, 1)
		require.Nil(t, p[0]["response_type"], "the retry went through: %v", p[0])
		require.Contains(t, p[0], "output")
		require.Equal(t, 2, front.callsOf("charge_card"))
		require.Equal(t, 1, srv.Charges(), "charged once: the 503 applied nothing")
	})
	t.Run("500 is UNKNOWN", func(t *testing.T) {
		t.Parallel()
		front, _ := newStatusFront(t)
		front.answer("tools/call", http.StatusInternalServerError, "")
		r := newRig(t, rigConfig{endpoint: front.url, then: oneCallPerTurn(charge())})
		p := responses(r.turn())["charge_card"]
		require.Len(t, p, 1)
		require.Equal(t, payloads.TypeOutcomeUnknown, p[0]["response_type"], "%v", p[0])
		require.Equal(t, "http_5xx", p[0]["error_class"])
		require.Equal(t, 1, front.callsOf("charge_card"), "sent once")
		outcomes := r.events.of(callbacks.EventCallOutcome)
		require.Len(t, outcomes, 1)
		require.Equal(t, classify.Unknown, outcomes[0].Outcome)
	})
}

// TestMCPListingStatusIsClassified: a listing answered with 503 is logged and counted
// as http_5xx, not as an unclassified failure, and the turn goes on.
func TestMCPListingStatusIsClassified(t *testing.T) {
	t.Parallel()
	front, _ := newStatusFront(t)
	front.answer("tools/list", http.StatusServiceUnavailable, "")
	logs := &syncbuf.Buffer{}
	r := newRig(t, rigConfig{endpoint: front.url, guard: func(c *mcpguard.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	}, steps: []breakertest.Step{breakertest.Text("no tools")}})
	r.turn()
	require.Equal(t, int64(1), r.ts.Stats().ListFailures)
	require.Contains(t, logs.String(), `"error_class":"http_5xx"`)
	require.NotContains(t, logs.String(), "zq9")
}

// recordingOAuth is an OAuthHandler that has no token and records what it was asked
// to authorize.
type recordingOAuth struct {
	mu       sync.Mutex
	statuses []int
}

func (h *recordingOAuth) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }

func (h *recordingOAuth) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.statuses = append(h.statuses, resp.StatusCode)
	return errors.New("no authorization in this test")
}

// TestMCPAuthStatusIsTheOAuthHandlersWhenOneIsSet: with an OAuthHandler on the
// transport, a 401 is the SDK's to answer by authorizing, so the guard hands it on.
func TestMCPAuthStatusIsTheOAuthHandlersWhenOneIsSet(t *testing.T) {
	t.Parallel()
	front, _ := newStatusFront(t)
	front.answer("tools/call", http.StatusUnauthorized, "")
	h := &recordingOAuth{}
	r := newRig(t, rigConfig{then: oneCallPerTurn(order()), guard: func(c *mcpguard.Config) {
		c.Toolset.Transport = &mcp.StreamableClientTransport{Endpoint: front.url, OAuthHandler: h}
	}})
	r.turn()
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Equal(t, []int{http.StatusUnauthorized}, h.statuses, "the SDK's OAuthHandler saw the 401")
}
