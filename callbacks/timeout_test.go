package callbacks_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// A tool that hangs is cut off by its timeout wrapper, and the plugin counts the
// timeout as a failure with an unknown outcome: the request may have been applied.
func TestAToolTimeoutIsACountedUnknownFailure(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hang := &rawTool{name: "enrich", run: func(ctx agent.Context) (map[string]any, error) {
			<-ctx.Done() // a dependency that never answers
			return nil, ctx.Err()
		}}
		wrapped := tooltimeout.MustWrap(hang, tooltimeout.Config{Timeout: 5 * time.Second, Attempts: 1, TurnBudget: 30 * time.Second})
		f := callbackstest.New(t, callbackstest.Config{
			Tools: []tool.Tool{wrapped}, Then: callbackstest.CallsThenText("enrich"),
			Deps: map[string]dependencymap.Dependency{"enrichment": {Tools: []string{"enrich"}}},
		})
		start := time.Now()
		turn := f.Run(t, "go")
		require.Equal(t, 5*time.Second, time.Since(start))
		resp := turn.FunctionResponses()[0].Response
		require.Equal(t, payloads.TypeFailed, resp[payloads.KeyResponseType], "the model gets the payload, not the error text")
		require.Equal(t, string(classify.ClassTimeout), resp[payloads.KeyErrorClass])
		outs := f.Events.Of(callbacks.EventCallOutcome)
		require.Len(t, outs, 1)
		require.Equal(t, classify.Unknown, outs[0].Outcome)
		require.Equal(t, classify.ClassTimeout, outs[0].Class)
		require.Equal(t, classify.Counts, outs[0].Verdict)
		require.Equal(t, breaker.Counts{Calls: 1, Failures: 1}, f.Breaker(t, "enrichment").Snapshot().Window)
		f.RequireClean(t)
	})
}
