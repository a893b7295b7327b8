package telemetry_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// stuckTool is a hand-written tool that ignores its context until released.
type stuckTool struct{ release chan struct{} }

func (stuckTool) Name() string        { return "export_report" }
func (stuckTool) Description() string { return "exports a report" }
func (stuckTool) IsLongRunning() bool { return false }
func (s stuckTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: s.Name(), Description: s.Description()}
}
func (s stuckTool) Run(agent.Context, any) (map[string]any, error) {
	<-s.release
	return map[string]any{"late": true}, nil
}

// toolCtx is the agent.Context a tool receives, reduced to its context.Context part
// and the call's IDs.
type toolCtx struct {
	agent.Context
	ctx context.Context
}

func (c *toolCtx) Deadline() (time.Time, bool) { return c.ctx.Deadline() }
func (c *toolCtx) Done() <-chan struct{}       { return c.ctx.Done() }
func (c *toolCtx) Err() error                  { return c.ctx.Err() }
func (c *toolCtx) Value(k any) any             { return c.ctx.Value(k) }
func (c *toolCtx) InvocationID() string        { return "e-42" }
func (c *toolCtx) FunctionCallID() string      { return "call-7" }

// TestAbandonedToolCallsAreVisible: a tool call that ignores its context and outlives
// its timeout is a metric (gauge up, counter up), a WARN record and a span event when
// the wrapper gives up on it, and the gauge comes down with an INFO record when it
// returns (issue 15 h: they were visible only in Stats).
func TestAbandonedToolCallsAreVisible(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		spanCtx, span := tp.Tracer("test").Start(context.Background(), "execute_tool export_report")
		release := make(chan struct{})
		w := tooltimeout.MustWrap(stuckTool{release}, tooltimeout.Config{Timeout: 5 * time.Second, OnAbandon: f.tel.ToolAbandoned})

		start := time.Now()
		_, err := w.Run(&toolCtx{ctx: spanCtx}, map[string]any{})
		span.End()
		require.IsType(t, &tooltimeout.TimeoutError{}, err)
		require.Equal(t, 5*time.Second, time.Since(start))

		const help = `
# HELP agentbreaker_tool_calls_abandoned Tool calls that ran past their timeout and are still running: the wrapper answered without them and their goroutine is stuck until the tool returns.
# TYPE agentbreaker_tool_calls_abandoned gauge
`
		const helpTotal = `
# HELP agentbreaker_tool_calls_abandoned_total Tool calls abandoned after their timeout because the tool ignored its context.
# TYPE agentbreaker_tool_calls_abandoned_total counter
agentbreaker_tool_calls_abandoned_total{tool="export_report"} 1
`
		f.compare(t, help+`agentbreaker_tool_calls_abandoned{tool="export_report"} 1`+helpTotal,
			"agentbreaker_tool_calls_abandoned", "agentbreaker_tool_calls_abandoned_total")
		warn := f.logs.withMsg(t, "agentbreaker: tool call abandoned")
		require.Len(t, warn, 1)
		require.Subset(t, warn[0], map[string]any{"level": "WARN", "tool": "export_report", "dependency": "export_report",
			"request_id": "e-42", "function_call_id": "call-7", "outcome": "UNKNOWN", "error_class": "timeout",
			"limit_ms": 5000.0, "still_running": 1.0})
		events := rec.Ended()[0].Events()
		require.Len(t, events, 1)
		require.Equal(t, "agentbreaker.abandoned", events[0].Name)

		close(release)
		synctest.Wait()
		require.Zero(t, w.Stats().Abandoned)
		f.compare(t, help+`agentbreaker_tool_calls_abandoned{tool="export_report"} 0`+helpTotal,
			"agentbreaker_tool_calls_abandoned", "agentbreaker_tool_calls_abandoned_total")
		back := f.logs.withMsg(t, "agentbreaker: abandoned tool call returned")
		require.Len(t, back, 1)
		require.Subset(t, back[0], map[string]any{"level": "INFO", "tool": "export_report", "still_running": 0.0})
	})
}
