package callbacks_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

// replayServer is a real local payments service that honours idempotency keys: the
// first POST /charge with a key applies the charge and drops the connection before
// answering; a later request with a key already applied answers 200 with the stored
// result and applies nothing. Every request's key is recorded.
type replayServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []string
	applied map[string]int // charges applied per key
}

func newReplayServer(t *testing.T) *replayServer {
	t.Helper()
	s := &replayServer{applied: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charge", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		key := r.Header.Get(httptransport.DefaultIdempotencyHeader)
		s.mu.Lock()
		s.keys = append(s.keys, key)
		seen := s.applied[key] > 0
		if !seen {
			s.applied[key]++
		}
		s.mu.Unlock()
		if seen {
			_, _ = w.Write([]byte(`{"charged": true, "replayed": true}`))
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		_ = conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *replayServer) requests() (keys []string, charges int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.applied {
		charges += n
	}
	return append([]string(nil), s.keys...), charges
}

// confirmationRequest returns the adk_request_confirmation call of a turn and the
// confirmation it carries.
func confirmationRequest(t *testing.T, turn *breakertest.Turn) (*genai.FunctionCall, toolconfirmation.ToolConfirmation, *genai.FunctionCall) {
	t.Helper()
	var reqs []*genai.FunctionCall
	for _, fc := range turn.FunctionCalls() {
		if fc.Name == toolconfirmation.FunctionCallName {
			reqs = append(reqs, fc)
		}
	}
	require.Len(t, reqs, 1, "one confirmation request")
	raw, err := json.Marshal(reqs[0].Args)
	require.NoError(t, err)
	var args struct {
		Original     genai.FunctionCall                `json:"originalFunctionCall"`
		Confirmation toolconfirmation.ToolConfirmation `json:"toolConfirmation"`
	}
	require.NoError(t, json.Unmarshal(raw, &args))
	return reqs[0], args.Confirmation, &args.Original
}

// answer sends the user's answer to a confirmation request the way adk-go expects it:
// a function response named adk_request_confirmation, with the request's call ID and
// a ToolConfirmation as its response.
func answer(t *testing.T, f *fixture, req *genai.FunctionCall, confirmed bool) *breakertest.Turn {
	t.Helper()
	msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: req.ID, Name: toolconfirmation.FunctionCallName, Response: map[string]any{"confirmed": confirmed},
	}}}}
	turn := &breakertest.Turn{}
	for ev, err := range f.h.Runner.Run(context.Background(), "user", f.sid, msg, agent.RunConfig{}) {
		require.NoError(t, err)
		if ev != nil {
			turn.Events = append(turn.Events, ev)
		}
	}
	return turn
}

// TestConfirmUnknownReplay follows a charge whose outcome is UNKNOWN through the real
// runner with Config.ConfirmUnknownReplays: the model's repeat is not sent but put to
// the user through adk-go's tool confirmation. Confirmed, the journal's intent is
// approved and the charge is sent once more with the same idempotency key (the server
// recognises it and applies nothing twice). Declined, nothing is sent and the intent
// still waits for an operator.
func TestConfirmUnknownReplay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		confirmed    bool
		wantRequests int
		wantState    journal.State   // of the first attempt's intent
		wantType     any             // of the resumed call's response
		wantRefused  int             // EventRetryRefused over both turns
		wantPending  int             // intents awaiting an operator at the end
		wantStates   []journal.State // of every intent of the call, oldest first
	}{
		{name: "confirmed", confirmed: true, wantRequests: 2, wantState: journal.StateApproved, wantType: nil,
			wantRefused: 1, wantPending: 0, wantStates: []journal.State{journal.StateApproved, journal.StateSucceeded}},
		{name: "declined", confirmed: false, wantRequests: 1, wantState: journal.StateAwaitingOperator,
			wantType: payloads.TypeOutcomeUnknown, wantRefused: 2, wantPending: 1,
			wantStates: []journal.State{journal.StateAwaitingOperator}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newReplayServer(t)
			path := filepath.Join(t.TempDir(), "journal.db")
			var j *journal.Journal
			var r *retry.Retrier
			args := map[string]any{"amount": 42, "to": "acct-7"}
			f := newFixture(t, fixtureConfig{
				steps: []breakertest.Step{
					breakertest.Call("charge", args),
					breakertest.Call("charge", args), // the model repeats it
					breakertest.Text("done"),         // after the user's answer
				},
				deps: map[string]dependencymap.Dependency{"payments": {Tools: []string{"charge"}}},
				cfg:  callbacks.Config{MutatingTools: []string{"charge"}, ConfirmUnknownReplays: true},
				prepare: func(f *fixture, cfg *callbacks.Config) {
					var err error
					j, err = journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: path}, Clock: f.clk})
					require.NoError(t, err)
					t.Cleanup(func() { _ = j.Close() })
					r = retry.MustNew(retry.Config{Journal: j.ForRetry(), Clock: f.clk})
					cfg.Retry, cfg.Journal = r, j
				},
				toolsOf: func(f *fixture) []tool.Tool {
					return []tool.Tool{f.cb.MustWithIdempotencyKey(httpTool(t, "charge", http.MethodPost, srv.URL+"/charge"))}
				},
			})

			turn := f.run(t, "pay acct-7 42")
			keys, charges := srv.requests()
			require.Len(t, keys, 1, "the repeat was not sent")
			require.Equal(t, 1, charges)
			require.Equal(t, []any{payloads.TypeOutcomeUnknown, payloads.TypeOutcomeUnknown}, responseTypes(turn))
			frs := turn.FunctionResponses()
			require.Contains(t, frs[1].Response[payloads.KeyInstruction], "asked whether to send it again")
			req, conf, orig := confirmationRequest(t, turn)
			require.Equal(t, "charge", orig.Name)
			require.Equal(t, turn.FunctionCalls()[1].ID, orig.ID, "the confirmation is for the repeat")
			require.Contains(t, conf.Hint, "may already have been carried out")
			require.False(t, conf.Confirmed)
			require.Equal(t, 2, f.model.Calls(), "the turn paused for the user's answer")

			intents, err := j.Intents(t.Context(), journal.Filter{Tool: "charge"})
			require.NoError(t, err)
			require.Len(t, intents, 1)
			first := intents[0]
			require.Equal(t, journal.StateAwaitingOperator, first.State)
			require.Equal(t, keys[0], first.IdempotencyKey)

			resumed := answer(t, f, req, tt.confirmed)
			keys, charges = srv.requests()
			require.Len(t, keys, tt.wantRequests, "requests that reached the server")
			for _, k := range keys {
				require.Equal(t, first.IdempotencyKey, k, "a replay carries the first attempt's key")
			}
			require.Equal(t, 1, charges, "the charge was applied once")
			rfrs := resumed.FunctionResponses()
			require.Len(t, rfrs, 1, "the resumed call's response")
			require.Equal(t, orig.ID, rfrs[0].ID)
			require.Equal(t, tt.wantType, rfrs[0].Response[payloads.KeyResponseType])
			if tt.confirmed {
				require.Equal(t, "ok", rfrs[0].Response["status"])
				require.Contains(t, rfrs[0].Response["body"], `"replayed": true`)
			} else {
				require.Contains(t, rfrs[0].Response[payloads.KeyReason], "chose not to send it again")
				require.Contains(t, rfrs[0].Response[payloads.KeyInstruction], "Do not repeat this action")
			}
			require.Equal(t, "done", resumed.FinalText())
			require.Equal(t, 3, f.model.Calls())

			got, err := j.Get(t.Context(), first.ID)
			require.NoError(t, err)
			require.Equal(t, tt.wantState, got.State)
			intents, err = j.Intents(t.Context(), journal.Filter{Tool: "charge"})
			require.NoError(t, err)
			var states []journal.State
			for _, in := range intents {
				states = append(states, in.State)
				require.Equal(t, first.RequestID, in.RequestID, "one logical operation")
			}
			require.ElementsMatch(t, tt.wantStates, states)
			pending, err := j.Pending(t.Context())
			require.NoError(t, err)
			require.Len(t, pending, tt.wantPending)
			refused := f.ev.of(callbacks.EventRetryRefused)
			require.Len(t, refused, tt.wantRefused)
			for _, e := range refused {
				require.Equal(t, retry.ReasonUnknownOutcome, e.RetryReason)
			}
			require.Zero(t, r.Tracking())
			f.requireClean(t)
		})
	}
}

func TestConfirmUnknownReplaysNeedsJournal(t *testing.T) {
	t.Parallel()
	deps := dependencymap.MustNew(dependencymap.Config{})
	r := retry.MustNew(retry.Config{})
	_, err := callbacks.New(callbacks.Config{Dependencies: deps, Retry: r, ConfirmUnknownReplays: true})
	require.ErrorContains(t, err, "Config.ConfirmUnknownReplays is true but Config.Journal is nil")
}
