package tooltimeout

import (
	"context"
	"time"
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

// notifyAbandon calls the hook, if any. A panicking hook must not kill the process
// from the tool's goroutine, where nothing else would recover it.
func (w *Tool) notifyAbandon(ctx context.Context, returned bool, err error) {
	if w.onAbandon == nil {
		return
	}
	defer func() { _ = recover() }()
	w.onAbandon(ctx, Abandon{Tool: w.Name(), Limit: w.timeout, Returned: returned, Running: w.abandoned.Load(), Err: err})
}
