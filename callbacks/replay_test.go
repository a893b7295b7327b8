package callbacks_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// The incident of the first design document: an enrichment API behind a breaker with
// a 50% rate gate over a 20-call volume gate, a 30 s cooldown, a 5 s tool timeout and
// a bulkhead of 20; about one turn a second; a nine-minute outage from 14:02 to 14:11.
var (
	replayStart    = time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC)
	replayOnset    = replayStart.Add(2 * time.Minute)
	replayRecovery = replayOnset.Add(9 * time.Minute)
	replayEnd      = replayRecovery.Add(2 * time.Minute)
)

// replayPolicy is the document's breaker. The document counts "12 of the last 20
// calls": a count window of 20 calls.
var replayPolicy = breaker.Policy{
	FailureRateThreshold: 0.5,
	MinimumCalls:         20,
	WindowCalls:          20,
	Cooldown:             30 * time.Second,
	CooldownMultiplier:   1,  // the document probes every 30 s; tools grow theirs by default
	Jitter:               -1, // one replica: nothing to spread; exact probe times
	Version:              "incident-replay",
}

// replayMaxAttempts is how often the model tries a failing call in one turn: once,
// and three re-issues (2,160 requests in nine minutes without a breaker).
const replayMaxAttempts = 4

// replayModel calls enrich_company and re-issues it while it fails, up to
// replayMaxAttempts calls; an agentbreaker payload, or an answer, ends the turn.
func replayModel() *breakertest.Model {
	return breakertest.MustNewModel(breakertest.ModelConfig{DiscardRequests: false, Then: func(r breakertest.Request) breakertest.Step {
		calls := 0
		for _, c := range r.Contents {
			for _, p := range c.Parts {
				if p.FunctionCall != nil {
					calls++
				}
			}
		}
		rs := r.FunctionResponses()
		if len(rs) == 0 {
			return breakertest.Call("enrich_company", map[string]any{"query": "acme"})
		}
		res := rs[0].Response
		if _, failed := res["error"]; failed && calls < replayMaxAttempts {
			return breakertest.Call("enrich_company", map[string]any{"query": "acme"}) // the model tries again
		}
		return breakertest.Text("Here is what I have on Acme.")
	}})
}

// replayFigures are what one replay measured.
type replayFigures struct {
	tripAfterOnset    time.Duration   // first closed -> open, from the onset
	probesPerCooldown []int64         // requests that reached the service in each half-open spell
	closedAfter       time.Duration   // first half_open -> closed after recovery, from the recovery
	duringOutage      int64           // requests that reached the service from onset to recovery
	total             int64           // requests over the whole replay
	transitions       []breaker.Event // every transition
}

// replayIncident runs one turn a second, each in a fresh session (a different user),
// through adk-go's runner from replayStart to replayEnd against a local counting
// server that answers 504 (a gateway in front of a provider that times out) during
// the outage. Time is the fake clock's: the 5 s the failing calls would block a
// worker are not waited for, so every turn starts on its second and the breaker sees
// each outcome at the second its turn started.
func replayIncident(t *testing.T, withPlugin bool, from, to time.Time) replayFigures {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(from)
	var mu sync.Mutex
	var fig replayFigures
	var spellStart int64
	server := breakertest.NewServer(t)
	deps := dependencymap.MustNew(dependencymap.Config{
		Clock: clk,
		Dependencies: map[string]dependencymap.Dependency{
			"enrichment": {Tools: []string{"enrich_company"}, Policy: replayPolicy},
		},
		OnStateChange: []func(breaker.Event){func(e breaker.Event) {
			mu.Lock()
			defer mu.Unlock()
			fig.transitions = append(fig.transitions, e)
			switch {
			case e.To == breaker.Open && e.From == breaker.Closed && fig.tripAfterOnset == 0:
				fig.tripAfterOnset = e.At.Sub(replayOnset)
			case e.To == breaker.HalfOpen:
				spellStart = server.Requests()
			case e.From == breaker.HalfOpen:
				fig.probesPerCooldown = append(fig.probesPerCooldown, server.Requests()-spellStart)
				if e.To == breaker.Closed && fig.closedAfter == 0 && !e.At.Before(replayRecovery) {
					fig.closedAfter = e.At.Sub(replayRecovery)
				}
			}
		}},
	})
	http5, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "enrich_company", URL: server.URL, TypedErrors: true})
	require.NoError(t, err)
	enrich := tooltimeout.MustWrap(http5, tooltimeout.Config{Timeout: 5 * time.Second})
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: replayModel(), Tools: []tool.Tool{enrich}})
	require.NoError(t, err)
	var plugins []*plugin.Plugin
	if withPlugin {
		cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk, Bulkheads: callbacks.Bulkheads{Limits: map[string]int{"enrichment": 20}}})
		plugins = []*plugin.Plugin{cb.Plugin()}
	}
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: plugins})
	var atOnset, atRecovery int64
	for now := from; now.Before(to); now = now.Add(time.Second) {
		clk.Set(now)
		switch {
		case now.Equal(replayOnset):
			atOnset = server.Requests()
			server.Set(breakertest.Status(http.StatusGatewayTimeout))
		case now.Equal(replayRecovery):
			atRecovery = server.Requests()
			server.Set(breakertest.OK(`{"employees": 420}`))
		}
		sid, err := h.NewSession(ctx)
		require.NoError(t, err)
		_, err = h.Run(ctx, sid, "Tell me about Acme.")
		require.NoError(t, err)
	}
	if !to.After(replayRecovery) {
		atRecovery = server.Requests()
	}
	mu.Lock()
	defer mu.Unlock()
	fig.duringOutage = atRecovery - atOnset
	fig.total = server.Requests()
	return fig
}

// TestIncidentReplay replays the design document's incident through the real runner
// and holds it to the document's goals. It prints its figures (go test -v -run
// TestIncidentReplay ./callbacks/).
func TestIncidentReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about two thousand turns")
	}
	t.Parallel()
	with := replayIncident(t, true, replayStart, replayEnd)
	without := replayIncident(t, false, replayOnset, replayRecovery)
	ratio := float64(without.duringOutage) / float64(max(with.duringOutage, 1))
	probes := map[int64]int{}
	for _, n := range with.probesPerCooldown {
		probes[n]++
	}
	t.Logf("incident replay (%s):\n"+
		"  tripped %s after the onset\n"+
		"  requests per half-open spell: %v (spells: %d)\n"+
		"  closed %s after the recovery\n"+
		"  requests reaching the service during the outage: %d with the plugin, %d without (%.0fx fewer)\n"+
		"  requests over the whole replay: %d",
		windowName(replayPolicy), with.tripAfterOnset, probes, len(with.probesPerCooldown), with.closedAfter,
		with.duringOutage, without.duringOutage, ratio, with.total)

	require.Positive(t, with.tripAfterOnset, "the breaker tripped after the onset")
	require.LessOrEqual(t, with.tripAfterOnset, time.Minute, "trip within 60 s of the onset")
	require.Equal(t, map[int64]int{1: len(with.probesPerCooldown)}, probes, "exactly one probe per cooldown")
	require.Positive(t, with.closedAfter, "closed after the recovery")
	require.LessOrEqual(t, with.closedAfter, replayPolicy.Cooldown, "closed within one cooldown of the recovery")
	require.LessOrEqual(t, with.duringOutage, int64(40), "at most 40 requests reach the service during the outage")
	require.GreaterOrEqual(t, ratio, 50.0, "at least 50x fewer requests than without the plugin")
	require.Equal(t, int64(540*replayMaxAttempts), without.duringOutage, "without the plugin every turn tries four times")
	closings := 0
	for _, e := range with.transitions {
		if e.To == breaker.Closed {
			closings++
		}
	}
	require.Equal(t, 1, closings, "one trip, one recovery: no flapping")

	// The page that shows these figures shows what this run measured.
	requireDocTable(t, "../docs/breaker.md", map[string]string{
		"trip after the onset":                                     fmt.Sprintf("%.0f s", with.tripAfterOnset.Seconds()),
		"requests per half-open spell":                             fmt.Sprintf("1 in each of %d spells", len(with.probesPerCooldown)),
		"closed after the recovery":                                fmt.Sprintf("%.0f s", with.closedAfter.Seconds()),
		"requests reaching the service during the 9-minute outage": fmt.Sprint(with.duringOutage),
		"the same traffic without agentbreaker":                    thousands(without.duringOutage),
		"reduction":                                                fmt.Sprintf("%.0f×", ratio),
	})
}

// requireDocTable checks that each row of a Markdown table on page whose first cell is
// a key of want ends with the cell want gives: a figure on a page is the figure the
// test measured, never a number typed once and left to drift.
func requireDocTable(t *testing.T, page string, want map[string]string) {
	t.Helper()
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) < 2 {
			continue
		}
		key := strings.TrimSpace(cells[0])
		if w, ok := want[key]; ok {
			seen[key] = true
			require.Equal(t, w, strings.TrimSpace(cells[len(cells)-1]), "%s: the row %q shows another figure than the test measured", page, key)
		}
	}
	for key := range want {
		require.True(t, seen[key], "%s has no table row %q", page, key)
	}
}

// thousands writes n as the pages do: 2,160.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// windowName describes the replay's window for its report.
func windowName(p breaker.Policy) string {
	if p.WindowCalls > 0 {
		return fmt.Sprintf("count window of %d calls", p.WindowCalls)
	}
	return fmt.Sprintf("time window %s", p.Window)
}
