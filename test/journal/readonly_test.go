package journal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	adkplugin "google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/journaltest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/retry"
)

// docs/side-effects.md: only an operation a repeat could harm writes a dispatch intent;
// in the plugin, the tools in MutatingTools. Ten read-only lookups and three charges,
// through adk-go's runner with the journal wired as the page shows, leave three
// intents, all of them charges (issue 48: thirteen before, ten of them lookups).
func TestOnlyMutationsWriteIntents(t *testing.T) {
	for _, journalOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("journal only=%v", journalOnly), func(t *testing.T) { onlyMutationsWriteIntents(t, journalOnly) })
	}
}

// onlyMutationsWriteIntents runs TestOnlyMutationsWriteIntents with the Retrier given
// on the journal, or with the journal alone (issue 48 e: the journal is given once).
func onlyMutationsWriteIntents(t *testing.T, journalOnly bool) {
	journaltest.ForEachBackend(t, func(t *testing.T, b journaltest.Backend) {
		fc := clock.NewFake(time.Time{})
		cfg := b.Config(t)
		cfg.Clock = fc
		j := journaltest.Open(t, cfg)
		deps := dependencymap.MustNew(dependencymap.Config{Clock: fc, Dependencies: map[string]dependencymap.Dependency{
			"crm": {Tools: []string{"crm_lookup"}}, "payments": {Tools: []string{"charge"}},
		}})
		se := callbacks.SideEffects{MutatingTools: []string{"charge"}, Journal: j}
		if !journalOnly {
			se.Retry = retry.MustNew(retry.Config{Journal: j.ForRetry(), Clock: fc, Sleeper: &retry.FakeSleeper{Clock: fc}})
		}
		cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: fc, SideEffects: se})
		ok := func(agent.Context, map[string]any) (map[string]any, error) {
			return map[string]any{"status": "ok"}, nil
		}
		lookup, err := functiontool.New(functiontool.Config{Name: "crm_lookup", Description: "Looks a customer up."}, ok)
		require.NoError(t, err)
		charge, err := functiontool.New(functiontool.Config{Name: "charge", Description: "Charges a card."}, ok)
		require.NoError(t, err)
		turn := 0
		model := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(req breakertest.Request) breakertest.Step {
			if len(req.FunctionResponses()) > 0 {
				return breakertest.Text("Done.")
			}
			turn++
			if turn%4 == 0 { // turns 4, 8, 12: a charge; the other ten: a lookup
				return breakertest.Call("charge", map[string]any{"amount": turn})
			}
			return breakertest.Call("crm_lookup", map[string]any{"customer": turn})
		}})
		root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: model, Tools: []tool.Tool{lookup, charge}})
		require.NoError(t, err)
		h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*adkplugin.Plugin{cb.Plugin()}})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for range 13 {
			sid, err := h.NewSession(ctx)
			require.NoError(t, err)
			res, err := h.Run(ctx, sid, "next")
			require.NoError(t, err)
			require.Empty(t, res.Errs)
		}
		intents, err := j.Intents(ctx, journal.Filter{})
		require.NoError(t, err)
		var tools []string
		for _, in := range intents {
			tools = append(tools, in.Tool)
		}
		require.Equal(t, []string{"charge", "charge", "charge"}, tools, fmt.Sprintf("%d intents", len(intents)))
	})
}
