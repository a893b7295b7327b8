package telemetry_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// unwrapping is a wrapper around a tool, as an idempotency-key wrapper is.
type unwrapping struct{ tool.Tool }

func (u unwrapping) Unwrap() tool.Tool { return u.Tool }

// Parts.Tools: a tooltimeout wrapper among the tools, found through Unwrap, reports
// its abandoned calls with no OnAbandon of the program's (issue 48, item 1:
// OnAbandon: tel.ToolAbandoned was a call a newcomer nearly forgot). A tool with its
// own OnAbandon keeps it, and each abandoned call counts once.
func TestWireToolsReportsAbandonedCalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		release := make(chan struct{})
		bare := tooltimeout.MustWrap(stuckTool{release}, tooltimeout.Config{Timeout: 5 * time.Second})
		own := tooltimeout.MustWrap(stuckTool{release}, tooltimeout.Config{Timeout: 5 * time.Second, OnAbandon: f.tel.ToolAbandoned})
		f.tel.Wire(telemetry.Parts{Tools: []tool.Tool{unwrapping{bare}, own}})
		f.tel.Wire(telemetry.Parts{Tools: []tool.Tool{bare}}) // again: nothing more

		for _, w := range []*tooltimeout.Tool{bare, own} {
			_, err := w.Run(&toolCtx{ctx: context.Background()}, map[string]any{})
			require.IsType(t, &tooltimeout.TimeoutError{}, err)
		}
		require.Equal(t, 2.0, counterVec(t, f, "agentbreaker_tool_calls_abandoned_total"),
			"each of the two abandoned calls counted once")
		close(release)
		synctest.Wait()
	})
}

// counterVec sums a family's samples in the fixture's registry.
func counterVec(t *testing.T, f *fixture, name string) float64 {
	t.Helper()
	families, err := f.reg.Gather()
	require.NoError(t, err)
	var sum float64
	for _, fam := range families {
		if fam.GetName() == name {
			for _, m := range fam.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
