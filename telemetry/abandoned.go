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
	tool := t.tool.required(a.Tool)
	if a.Returned {
		// Only the label the abandonment used: never a new series on the way out.
		if !t.budget.known(seriesKey{fam: famAbandoned, labels: [4]string{tool}}) {
			tool = otherLabel
		}
	} else {
		t.abandonedAll.WithLabelValues(t.admitOne(famAbandonedTotal, tool)).Inc()
		tool = t.admitOne(famAbandoned, tool)
	}
	// Up on abandoning, down on the return: right however many wrappers share a name
	// or are folded into "other".
	if a.Returned {
		t.abandoned.WithLabelValues(tool).Dec()
	} else {
		t.abandoned.WithLabelValues(tool).Inc()
	}
	level, msg := slog.LevelWarn, "agentbreaker: tool call abandoned"
	if a.Returned {
		level, msg = slog.LevelInfo, "agentbreaker: abandoned tool call returned"
	}
	extra := []slog.Attr{
		slog.String(KeyTool, a.Tool),
		slog.String(KeyOutcome, classify.Unknown.String()),
		slog.String(KeyErrorClass, string(classify.ClassTimeout)),
		slog.Float64("limit_ms", millis(a.Limit)),
		slog.Int64("still_running", a.Running),
	}
	if a.Err != nil {
		extra = append(extra, slog.String("error", a.Err.Error()))
	}
	t.logCall(ctx, level, msg, a.Tool, "", 0, extra...)
	if !a.Returned {
		AnnotateSpan(ctx, Decision{Kind: DecisionAbandoned, Dependency: a.Tool,
			Outcome: classify.Unknown, Class: classify.ClassTimeout, Elapsed: a.Limit})
	}
}
