package telemetry

import (
	"context"
	"log/slog"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// ToolAbandoned reports a tool call that its timeout wrapper stopped waiting for while
// the tool kept running, and that call's eventual return. Pass it as
// tooltimeout.Config.OnAbandon:
//
//	tooltimeout.MustWrap(t, tooltimeout.Config{Timeout: 10 * time.Second, OnAbandon: tel.ToolAbandoned})
//
// Abandoning raises agentbreaker_tool_calls_abandoned{tool} (abandoned calls still
// running) by one and the return lowers it; abandoning also counts agentbreaker_tool_calls_abandoned_total, logs a
// WARN record ("agentbreaker: tool call abandoned") and adds an "agentbreaker.abandoned"
// event to the call's span; the return logs at INFO. The tool is
// also the dependency key in the records: the wrapper does not know the map.
func (t *Telemetry) ToolAbandoned(ctx context.Context, a tooltimeout.Abandon) {
	if t == nil {
		return
	}
	t.s.ToolAbandoned(ctx, a)
	level, msg := slog.LevelWarn, "agentbreaker: tool call abandoned"
	if a.Returned {
		level, msg = slog.LevelInfo, "agentbreaker: abandoned tool call returned"
	}
	extra := []slog.Attr{
		slog.String(keyTool, a.Tool),
		slog.String(keyOutcome, classify.Unknown.String()),
		slog.String(keyErrorClass, string(classify.ClassTimeout)),
		slog.Float64("limit_ms", millis(a.Limit)),
		slog.Int64("still_running", a.Running),
	}
	if a.Err != nil {
		extra = append(extra, slog.String("error", a.Err.Error()))
	}
	t.logCall(ctx, level, msg, a.Tool, "", 0, extra...)
}
