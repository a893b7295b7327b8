package loopguard_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/loopguard"
)

func TestConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     loopguard.Config
		wantErr string
	}{
		{"negative firm", loopguard.Config{FirmAfter: -1}, "loopguard: Config.FirmAfter = -1: must be at least 1"},
		{"persisted prefix", loopguard.Config{StatePrefix: "user:x."}, `loopguard: Config.StatePrefix = user:x.: must start with "temp:"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := loopguard.New(tt.cfg)
			require.Nil(t, g)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	g := loopguard.MustNew(loopguard.Config{})
	require.Equal(t, 2, g.Config().FirmAfter)
	require.Equal(t, 4, g.Config().MaxModelCallsWhileOpen)
	require.Equal(t, "temp:agentbreaker.short_circuits.crm", g.StateKey("crm"))
	require.Panics(t, func() { loopguard.MustNew(loopguard.Config{FirmAfter: -2}) })
}

func TestShortCircuitsTurnFirm(t *testing.T) {
	t.Parallel()
	tr := loopguard.MustNew(loopguard.Config{FirmAfter: 2}).Track()
	require.Equal(t, loopguard.Decision{Count: 1}, tr.ShortCircuit("crm"))
	require.Equal(t, loopguard.Decision{Count: 1}, tr.ShortCircuit("weather"), "per dependency")
	require.Equal(t, loopguard.Decision{Count: 2, Firm: true, FirstFirm: true}, tr.ShortCircuit("crm"))
	require.Equal(t, loopguard.Decision{Count: 3, Firm: true}, tr.ShortCircuit("crm"))
	require.Equal(t, 3, tr.Count("crm"))
	require.Equal(t, 4, tr.Total())
	require.Equal(t, []string{"crm", "weather"}, tr.Dependencies())
}

func TestParallelShortCircuitsLoseNoCount(t *testing.T) {
	t.Parallel()
	tr := loopguard.MustNew(loopguard.Config{}).Track()
	var wg sync.WaitGroup
	firsts := make(chan bool, 1000)
	for range 10 {
		wg.Go(func() {
			for range 100 {
				firsts <- tr.ShortCircuit("crm").FirstFirm
			}
		})
	}
	wg.Wait()
	close(firsts)
	n := 0
	for f := range firsts {
		if f {
			n++
		}
	}
	require.Equal(t, 1000, tr.Count("crm"))
	require.Equal(t, 1, n, "exactly one call turned the dependency firm")
}

func TestModelCallCap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		max  int
		want []bool
	}{
		{"default of four", 0, []bool{true, true, true, true, false, false}},
		{"one", 1, []bool{true, false, false, false, false, false}},
		{"off", -1, []bool{true, true, true, true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := loopguard.MustNew(loopguard.Config{MaxModelCallsWhileOpen: tt.max})
			tr := g.Track()
			for range 5 {
				n, ok := tr.ModelCall()
				require.True(t, ok, "free before any short-circuit")
				require.Zero(t, n)
			}
			tr.ShortCircuit("crm")
			var got []bool
			for range 6 {
				_, ok := tr.ModelCall()
				got = append(got, ok)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestCapResponse(t *testing.T) {
	t.Parallel()
	g := loopguard.MustNew(loopguard.Config{})
	tr := g.Track()
	text := func() string { return g.CapResponse(tr).Content.Parts[0].Text }
	require.Equal(t, "I could not finish this request because a service I depend on is unavailable right now. Please try again later.", text())
	tr.ShortCircuit("crm\x1b[31m")
	require.Equal(t, "I could not finish this request because crm__31m is unavailable right now. Please try again later.", text())
	tr.ShortCircuit("weather")
	tr.ShortCircuit("maps")
	require.Contains(t, text(), "crm__31m, maps and weather are unavailable")
	require.True(t, g.CapResponse(tr).TurnComplete)

	custom := loopguard.MustNew(loopguard.Config{CapMessage: func(d []string) string { return "sorry: " + d[0] }})
	tr2 := custom.Track()
	tr2.ShortCircuit("x")
	require.Equal(t, "sorry: x", custom.CapResponse(tr2).Content.Parts[0].Text)
}

func TestFilterRemovesOpenToolsOnCopies(t *testing.T) {
	t.Parallel()
	g := loopguard.MustNew(loopguard.Config{HideOpenTools: true})
	tr := g.Track()
	lookup := &genai.FunctionDeclaration{Name: "lookup"}
	update := &genai.FunctionDeclaration{Name: "update"}
	weather := &genai.FunctionDeclaration{Name: "weather"}
	transfer := &genai.FunctionDeclaration{Name: "transfer_to_agent"}
	fnTool := &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{lookup, update, weather, transfer}}
	newReq := func() *model.LLMRequest {
		return &model.LLMRequest{
			Tools:  map[string]any{"lookup": 1, "update": 2, "weather": 3, "transfer_to_agent": 4},
			Config: &genai.GenerateContentConfig{Tools: []*genai.Tool{fnTool}},
		}
	}
	deps := map[string]string{"lookup": "crm", "update": "crm", "weather": "weather"}
	depOf := func(tool string) (string, bool) { d, ok := deps[tool]; return d, ok }
	openDeps := map[string]bool{"crm": true}
	var mu sync.Mutex
	open := func(d string) bool { mu.Lock(); defer mu.Unlock(); return openDeps[d] }

	req := newReq()
	orig := req.Tools
	removed := g.Filter(req, tr, depOf, open)
	require.Equal(t, []string{"lookup", "update"}, removed)
	require.Len(t, orig, 4, "the original tool map is untouched")
	require.Len(t, fnTool.FunctionDeclarations, 4, "the original declarations are untouched")
	require.ElementsMatch(t, []string{"lookup", "update", "weather", "transfer_to_agent"}, keys(req.Tools),
		"hidden tools stay dispatchable, so a call made anyway reaches the breaker")
	require.Equal(t, []*genai.FunctionDeclaration{weather, transfer}, req.Config.Tools[0].FunctionDeclarations)
	require.True(t, tr.Hidden("crm"))

	// Still refusing: still hidden.
	require.Equal(t, []string{"lookup", "update"}, g.Filter(newReq(), tr, depOf, open))

	// A probe may go: the tools are offered again in the same invocation.
	mu.Lock()
	openDeps["crm"] = false
	mu.Unlock()
	req = newReq()
	require.Nil(t, g.Filter(req, tr, depOf, open))
	require.False(t, tr.Hidden("crm"))
	require.Equal(t, []*genai.FunctionDeclaration{lookup, update, weather, transfer}, req.Config.Tools[0].FunctionDeclarations)

	// A fresh invocation sees them too.
	require.Nil(t, g.Filter(newReq(), g.Track(), depOf, open))

	// The dependency is asked once per request, however many tools it has.
	asked := 0
	g.Filter(newReq(), g.Track(), depOf, func(string) bool { asked++; return true })
	require.Equal(t, 2, asked, "crm and weather")

	// Removing every function drops the empty function tool.
	search := &genai.Tool{GoogleSearch: &genai.GoogleSearch{}}
	only := &model.LLMRequest{
		Tools:  map[string]any{"lookup": 1},
		Config: &genai.GenerateContentConfig{Tools: []*genai.Tool{search, {FunctionDeclarations: []*genai.FunctionDeclaration{lookup}}}},
	}
	g.Filter(only, tr, depOf, func(string) bool { return true })
	require.Equal(t, []*genai.Tool{search}, only.Config.Tools)
	require.Nil(t, g.Filter(&model.LLMRequest{}, tr, depOf, open))
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
