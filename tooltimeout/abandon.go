package tooltimeout

import (
	"context"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/attach"
)

// Abandon reports a call the wrapper stopped waiting for while the tool kept running
// (the tool ignores its context), and later that call's return. Such a call holds a
// goroutine, and often a connection, until it returns: Config.OnAbandon makes it
// visible (the telemetry package turns it into a metric, a log record and a span
// event).
type Abandon struct {
	// Tool is the wrapped tool's name.
	Tool string
	// Limit is the tool's timeout.
	Limit time.Duration
	// Returned is false when the wrapper gives up on the call, true when the abandoned
	// call finally returns (its result is dropped).
	Returned bool
	// Running is how many abandoned calls of this tool are still running after this
	// event (Stats().Abandoned). When a tool returns just as the wrapper gives up on
	// it, the two reports of that call can arrive in either order, so count with +1
	// and -1 per report rather than trusting one reading.
	Running int64
	// Err is what the tool returned (Returned only; nil for a success or a panic
	// recovered into a *PanicError, which is Err then).
	Err error
}

// notifyAbandon calls the hook, if any: Config.OnAbandon, else the one the
// telemetry's Wire attached. A panicking hook must not kill the process from the
// tool's goroutine, where nothing else would recover it.
func (w *Tool) notifyAbandon(ctx context.Context, returned bool, err error) {
	hook := w.onAbandon
	if hook == nil {
		if p := w.wired.Load(); p != nil {
			hook = *p
		}
	}
	if hook == nil {
		return
	}
	defer func() { _ = recover() }()
	hook(ctx, Abandon{Tool: w.Name(), Limit: w.timeout, Returned: returned, Running: w.abandoned.Load(), Err: err})
}

// The telemetry's Wire attaches its abandon hook after Wrap, through internal/attach
// rather than an exported method. A tool whose Config.OnAbandon is set keeps it, and
// Wire's hook is declined, so that an event is never counted twice.
func init() { attach.Register(addAbandonHook) }

func addAbandonHook(w *Tool, hook func(context.Context, Abandon)) bool {
	if w == nil || hook == nil || w.onAbandon != nil {
		return false
	}
	return w.wired.CompareAndSwap(nil, &hook)
}
