package adaptive_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"
)

// docs/adaptive-concurrency.md, "How it decides": the limit is raised only "with at
// least half the limit in use at some moment since the last update". Turns from many
// sessions, run one after the other from goroutines of their own, each make one call
// that answers at once: never more than one call is in flight, so a limit of 20 is never
// half in use and stays 20 however many goroutines the calls came from. Then the same
// calls twelve at a time: half the limit is in flight, and the limit is raised.
func TestALimitNobodyUsesIsNotRaisedWhateverTheGoroutines(t *testing.T) {
	fc := clock.NewFake(time.Time{})
	srv := breakertest.NewServer(t)
	srv.Set(breakertest.Behavior{Status: 200, Body: "results"})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fc, Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"web_search"}, Adaptive: &adaptivelimit.Config{InitialLimit: 20, MinSamples: 5}},
	}})
	lim := deps.Limiter("search")
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: fc})
	search, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "web_search", URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	// The user's text is how many web_search calls the model makes at once.
	m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		n := len(r.Contents[len(r.Contents)-1].Parts[0].Text)
		calls := make([]*genai.FunctionCall, n)
		for i := range calls {
			calls[i] = &genai.FunctionCall{Name: "web_search", Args: map[string]any{"query": "q"}}
		}
		return breakertest.Calls(calls...)
	}})
	ag, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{search}})
	if err != nil {
		t.Fatal(err)
	}
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: ag, Plugins: []*plugin.Plugin{guard.Plugin()}})
	ctx := context.Background()
	turn := func(calls string) {
		sid, err := h.NewSession(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := h.Run(ctx, sid, calls); err != nil {
			t.Error(err)
		}
	}

	// 200 turns of one call, 50ms apart on the fake clock, taken in turns by 32 live
	// goroutines: four seconds, eight update intervals.
	var turns [32]chan string
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range turns {
		turns[g] = make(chan string)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for calls := range turns[g] {
				turn(calls)
				done <- struct{}{}
			}
		}()
	}
	for i := range 200 {
		turns[i%len(turns)] <- "1"
		<-done
		fc.Advance(50 * time.Millisecond)
	}
	for _, c := range turns {
		close(c)
	}
	wg.Wait()
	if got := lim.Limit(); got != 20 {
		t.Fatalf("limit %d after 200 calls one at a time from 32 goroutines, want the initial 20: never half of it in flight", got)
	}
	if got := srv.Requests(); got != 200 {
		t.Fatalf("%d requests reached the server, want 200", got)
	}

	// Twelve parallel calls a turn: half of 20 in flight at once, answering at the
	// no-load latency, and the limit is raised.
	for range 20 {
		turn("xxxxxxxxxxxx")
		fc.Advance(500 * time.Millisecond)
	}
	if got := lim.Limit(); got <= 20 {
		t.Errorf("limit %d after turns of twelve calls at once, want it raised above 20", got)
	}
}
