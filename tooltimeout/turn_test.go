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
	h, tools := harnessTools(t, func(agent.Context, struct{}) (map[string]any, error) { return nil, nil })
	tests := []struct {
		name    string
		cfg     tooltimeout.TurnConfig
		wantErr string
	}{
		{"no runner", tooltimeout.TurnConfig{Timeout: time.Second}, "TurnConfig.Runner = nil: required"},
		{"no timeout", tooltimeout.TurnConfig{Runner: h.Runner}, "TurnConfig.Timeout = 0s: must be at least 1ms"},
		{"negative grace", tooltimeout.TurnConfig{Runner: h.Runner, Timeout: time.Second, Grace: -1}, "TurnConfig.Grace = -1ns"},
		{"nothing to check", tooltimeout.TurnConfig{Runner: h.Runner, Timeout: 10 * time.Second},
			"TurnConfig.Tools = []: is empty and so are TurnConfig.Toolsets and TurnConfig.Layers: give the agent's tools and tool sets (or their Layers) so their timeouts can be checked against TurnConfig.Timeout 10s"},
		{"turn shorter than a tool's timeout", tooltimeout.TurnConfig{Runner: h.Runner, Timeout: 3 * time.Second,
			Tools: append(tools, tooltimeout.MustWrap(tools[0], tooltimeout.Config{Timeout: 5 * time.Second}))},
			`TurnConfig.Tools[1] = 5s: tool "work" against TurnConfig.Timeout 3s: layered timeouts do not fit: tool timeout 5s × 1 attempt = 5s, more than the turn budget 3s`},
		{"sessions without app", tooltimeout.TurnConfig{Runner: h.Runner, Timeout: time.Second, Sessions: h.Sessions, Tools: []tool.Tool{}, Layers: []tooltimeout.Layers{{ToolTimeout: time.Millisecond}}}, `TurnConfig.AppName = "": required with Sessions`},
		{"layers do not fit", tooltimeout.TurnConfig{Runner: h.Runner, Timeout: 10 * time.Second,
			Layers: []tooltimeout.Layers{{ToolTimeout: 4 * time.Second, Attempts: 3}}},
			"TurnConfig.Layers[0] = {4s 3 0s 0s 0s}: layered timeouts do not fit: tool timeout 4s × 3 attempts = 12s, more than the turn budget 10s"},
		{"layers without a tool timeout", tooltimeout.TurnConfig{Runner: h.Runner, Timeout: 10 * time.Second,
			Layers: []tooltimeout.Layers{{Attempts: 2}}},
			"tooltimeout: TurnConfig.Layers[0].ToolTimeout = 0s: must be positive"},
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
	h, _ := harnessTools(t, work)
	return h
}

// harnessTools is harness that also returns the agent's tools, for TurnConfig.Tools.
func harnessTools(t *testing.T, work func(agent.Context, struct{}) (map[string]any, error)) (*breakertest.Harness, []tool.Tool) {
	t.Helper()
	w, err := functiontool.New(functiontool.Config{Name: "work", Description: "Does work."}, work)
	require.NoError(t, err)
	m := breakertest.MustNewModel(breakertest.ModelConfig{
		Steps: []breakertest.Step{breakertest.Call("work", map[string]any{})},
		Then:  func(breakertest.Request) breakertest.Step { return breakertest.Text("done") },
	})
	tools := []tool.Tool{w}
	a, err := llmagent.New(llmagent.Config{Name: "root", Model: m, Tools: tools})
	require.NoError(t, err)
	return breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a}), tools
}

func TestTurnWithinItsBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, tools := harnessTools(t, func(agent.Context, struct{}) (map[string]any, error) {
			time.Sleep(time.Second) // virtual time inside the bubble
			return map[string]any{"ok": true}, nil
		})
		turn := tooltimeout.MustNewTurn(tooltimeout.TurnConfig{Runner: h.Runner, Timeout: 10 * time.Second, Tools: tools})
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
		h, tools := harnessTools(t, func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		turn := tooltimeout.MustNewTurn(tooltimeout.TurnConfig{Runner: h.Runner, Timeout: 10 * time.Second, Tools: tools, Grace: time.Second,
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
		h, tools := harnessTools(t, func(agent.Context, struct{}) (map[string]any, error) {
			<-release
			return map[string]any{"late": true}, nil
		})
		turn := tooltimeout.MustNewTurn(tooltimeout.TurnConfig{Runner: h.Runner, Timeout: 10 * time.Second, Tools: tools, Grace: time.Second,
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

// Issue 12h: the answer to a call cut by the turn deadline names the call's real
// dependency, and tells the model "do not repeat" only for a tool with side effects.
func TestCloseOrphansNamesTheDependencyAndSparesReadOnlyTools(t *testing.T) {
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
		{FunctionCall: &genai.FunctionCall{ID: "read", Name: "lookup_customer"}},
		{FunctionCall: &genai.FunctionCall{ID: "write", Name: "charge_card"}},
	}}
	require.NoError(t, h.Sessions.AppendEvent(ctx, got.Session, call))
	deps := map[string]string{"lookup_customer": "crm", "charge_card": "payments"}
	closed, err := tooltimeout.CloseOrphansWith(ctx, h.Sessions, tooltimeout.Orphans{
		AppName: "breakertest", UserID: "user", SessionID: sid, InvocationID: "inv-1",
		MutatingTools: []string{"charge_card"},
		DependencyOf:  func(tool string) (string, bool) { d, ok := deps[tool]; return d, ok },
	})
	require.NoError(t, err)
	require.Equal(t, []string{"read", "write"}, closed)
	answers := map[string]map[string]any{}
	got, err = h.Sessions.Get(ctx, &session.GetRequest{AppName: "breakertest", UserID: "user", SessionID: sid})
	require.NoError(t, err)
	for ev := range got.Session.Events().All() {
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil {
				answers[p.FunctionResponse.ID] = p.FunctionResponse.Response
			}
		}
	}
	read, write := answers["read"], answers["write"]
	require.Equal(t, "crm", read["dependency"])
	require.Equal(t, payloads.TypeUnavailable, read["response_type"])
	require.Equal(t, "deadline", read["error_class"])
	require.NotContains(t, read["instruction"], "Do not repeat")
	require.Equal(t, "payments", write["dependency"])
	require.Equal(t, payloads.TypeOutcomeUnknown, write["response_type"])
	require.Contains(t, write["instruction"], "Do not repeat")
}
