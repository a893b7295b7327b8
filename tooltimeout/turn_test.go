package tooltimeout_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

func TestNewTurnConfigErrors(t *testing.T) {
	t.Parallel()
	h := harness(t, func(agent.Context, struct{}) (map[string]any, error) { return nil, nil })
	tests := []struct {
		name    string
		cfg     tooltimeout.TurnConfig
		wantErr string
	}{
		{"no runner", tooltimeout.TurnConfig{Timeout: time.Second}, "TurnConfig.Runner = nil: required"},
		{"no timeout", tooltimeout.TurnConfig{Runner: h.Runner}, "TurnConfig.Timeout = 0s: must be at least 1ms"},
		{"negative grace", tooltimeout.TurnConfig{Runner: h.Runner, Timeout: time.Second, Grace: -1}, "TurnConfig.Grace = -1ns"},
		{"sessions without app", tooltimeout.TurnConfig{Runner: h.Runner, Timeout: time.Second, Sessions: h.Sessions}, `TurnConfig.AppName = "": required with Sessions`},
		{"layers do not fit", tooltimeout.TurnConfig{Runner: h.Runner, Timeout: 10 * time.Second,
			Layers: []tooltimeout.Layers{{ToolTimeout: 4 * time.Second, Attempts: 3}}},
			"TurnConfig.Layers[0]: tooltimeout: layered timeouts do not fit: tool timeout 4s × 3 attempts = 12s, more than the turn budget 10s"},
		{"layers for another turn", tooltimeout.TurnConfig{Runner: h.Runner, Timeout: 10 * time.Second,
			Layers: []tooltimeout.Layers{{ToolTimeout: time.Second, Turn: 20 * time.Second}}},
			"TurnConfig.Layers[0].Turn = 20s: differs from TurnConfig.Timeout 10s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			turn, err := tooltimeout.NewTurn(tt.cfg)
			require.Nil(t, turn)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	require.Panics(t, func() { tooltimeout.MustNewTurn(tooltimeout.TurnConfig{}) })
}

// harness builds an agent whose model calls "work" once and then answers.
func harness(t *testing.T, work func(agent.Context, struct{}) (map[string]any, error)) *breakertest.Harness {
	t.Helper()
	w, err := functiontool.New(functiontool.Config{Name: "work", Description: "Does work."}, work)
	require.NoError(t, err)
	m := breakertest.MustNewModel(breakertest.ModelConfig{
		Steps: []breakertest.Step{breakertest.Call("work", map[string]any{})},
		Then:  func(breakertest.Request) breakertest.Step { return breakertest.Text("done") },
	})
	a, err := llmagent.New(llmagent.Config{Name: "root", Model: m, Tools: []tool.Tool{w}})
	require.NoError(t, err)
	return breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a})
}

func TestTurnWithinItsBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := harness(t, func(agent.Context, struct{}) (map[string]any, error) {
			time.Sleep(time.Second) // virtual time inside the bubble
			return map[string]any{"ok": true}, nil
		})
		turn := tooltimeout.MustNewTurn(tooltimeout.TurnConfig{Runner: h.Runner, Timeout: 10 * time.Second})
		ctx := context.Background()
		sid, err := h.NewSession(ctx)
		require.NoError(t, err)
		res, err := turn.Run(ctx, "user", sid, genai.NewContentFromText("go", genai.RoleUser))
		require.NoError(t, err)
		require.False(t, res.TimedOut)
		require.False(t, res.Abandoned)
		<-res.Done
		require.Equal(t, "done", res.Events[len(res.Events)-1].Content.Parts[0].Text)
	})
}

func TestTurnDeadlineWithAToolThatHonoursIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := harness(t, func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		turn := tooltimeout.MustNewTurn(tooltimeout.TurnConfig{Runner: h.Runner, Timeout: 10 * time.Second, Grace: time.Second,
			Sessions: h.Sessions, AppName: "breakertest"})
		ctx := context.Background()
		sid, err := h.NewSession(ctx)
		require.NoError(t, err)
		start := time.Now()
		res, err := turn.Run(ctx, "user", sid, genai.NewContentFromText("go", genai.RoleUser))
		require.ErrorIs(t, err, tooltimeout.ErrTurnDeadline)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, 10*time.Second, time.Since(start), "the turn ended at its deadline")
		require.True(t, res.TimedOut)
		require.False(t, res.Abandoned, "the tool returned within the grace period")
		<-res.Done
		require.Empty(t, orphans(t, h, sid), "the flow answered the call itself")
	})
}

func TestTurnDeadlineWithAToolThatIgnoresIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := harness(t, func(agent.Context, struct{}) (map[string]any, error) {
			<-release
			return map[string]any{"late": true}, nil
		})
		turn := tooltimeout.MustNewTurn(tooltimeout.TurnConfig{Runner: h.Runner, Timeout: 10 * time.Second, Grace: time.Second,
			Sessions: h.Sessions, AppName: "breakertest"})
		ctx := context.Background()
		sid, err := h.NewSession(ctx)
		require.NoError(t, err)
		start := time.Now()
		res, err := turn.Run(ctx, "user", sid, genai.NewContentFromText("go", genai.RoleUser))
		require.ErrorIs(t, err, tooltimeout.ErrTurnDeadline)
		require.Equal(t, 11*time.Second, time.Since(start), "deadline plus grace, not the tool's pace")
		require.True(t, res.Abandoned)
		select {
		case <-res.Done:
			t.Fatal("the run cannot have ended while its tool is blocked")
		default:
		}
		close(release)
		<-res.Done
		require.Empty(t, orphans(t, h, sid))
	})
}

func TestCloseOrphans(t *testing.T) {
	t.Parallel()
	h := harness(t, func(agent.Context, struct{}) (map[string]any, error) { return nil, nil })
	ctx := context.Background()
	sid, err := h.NewSession(ctx)
	require.NoError(t, err)
	got, err := h.Sessions.Get(ctx, &session.GetRequest{AppName: "breakertest", UserID: "user", SessionID: sid})
	require.NoError(t, err)
	call := session.NewEvent(ctx, "inv-1")
	call.Author = "root"
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "work"}},
		{FunctionCall: &genai.FunctionCall{ID: "c2", Name: "work"}},
		{FunctionCall: &genai.FunctionCall{ID: "lr", Name: "work"}},
	}}
	call.LongRunningToolIDs = []string{"lr"}
	require.NoError(t, h.Sessions.AppendEvent(ctx, got.Session, call))
	answered := session.NewEvent(ctx, "inv-1")
	answered.Author = "root"
	answered.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{FunctionResponse: &genai.FunctionResponse{ID: "c2", Name: "work", Response: map[string]any{"ok": true}}},
	}}
	require.NoError(t, h.Sessions.AppendEvent(ctx, got.Session, answered))

	closed, err := tooltimeout.CloseOrphans(ctx, h.Sessions, "breakertest", "user", sid, "inv-1")
	require.NoError(t, err)
	require.Equal(t, []string{"c1"}, closed, "answered and long-running calls are left alone")
	require.Equal(t, []string{"c1"}, nil2empty(orphansAnswered(t, h, sid)))
	again, err := tooltimeout.CloseOrphans(ctx, h.Sessions, "breakertest", "user", sid, "inv-1")
	require.NoError(t, err)
	require.Empty(t, again, "idempotent")
	_, err = tooltimeout.CloseOrphans(ctx, h.Sessions, "breakertest", "user", "no-such-session", "inv-1")
	require.Error(t, err)
}

// orphans returns the IDs of non-long-running calls without a response.
func orphans(t *testing.T, h *breakertest.Harness, sid string) []string {
	t.Helper()
	got, err := h.Sessions.Get(context.Background(), &session.GetRequest{AppName: "breakertest", UserID: "user", SessionID: sid})
	require.NoError(t, err)
	answered := map[string]bool{}
	var calls []string
	for ev := range got.Session.Events().All() {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil {
				answered[p.FunctionResponse.ID] = true
			}
			if p.FunctionCall != nil {
				calls = append(calls, p.FunctionCall.ID)
			}
		}
	}
	var out []string
	for _, c := range calls {
		if !answered[c] {
			out = append(out, c)
		}
	}
	return out
}

// orphansAnswered returns the IDs answered with an outcome-unknown payload.
func orphansAnswered(t *testing.T, h *breakertest.Harness, sid string) []string {
	t.Helper()
	got, err := h.Sessions.Get(context.Background(), &session.GetRequest{AppName: "breakertest", UserID: "user", SessionID: sid})
	require.NoError(t, err)
	var out []string
	for ev := range got.Session.Events().All() {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if fr := p.FunctionResponse; fr != nil && fr.Response["response_type"] == payloads.TypeOutcomeUnknown {
				require.Equal(t, "deadline", fr.Response["error_class"])
				out = append(out, fr.ID)
			}
		}
	}
	return out
}

func nil2empty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
