package tooltimeout

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/internal/toolwrap"
)

// TimeoutError is returned when a wrapped tool did not finish within its timeout. It
// says it is a timeout and unwraps to context.DeadlineExceeded, so the classify
// package sees our own client-side timeout (class timeout, outcome UNKNOWN, counted),
// not the caller giving up.
type TimeoutError struct {
	Tool  string
	Limit time.Duration
	// Err is what the tool returned, if it returned before the wrapper gave up on it.
	Err error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("tooltimeout: tool %q did not finish within %s", e.Tool, e.Limit)
}

// Timeout reports true.
func (e *TimeoutError) Timeout() bool { return true }

// Unwrap returns context.DeadlineExceeded and the tool's own error.
func (e *TimeoutError) Unwrap() []error {
	if e.Err != nil {
		return []error{context.DeadlineExceeded, e.Err}
	}
	return []error{context.DeadlineExceeded}
}

// PanicError is returned when a wrapped tool panicked. Its message names only the tool:
// the panic value and stack are for logs, not for the model.
type PanicError struct {
	Tool  string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("tooltimeout: tool %q panicked", e.Tool) }

// Config configures one wrapped tool.
type Config struct {
	// Timeout bounds each call. 0 means no timeout: the wrapper then only turns panics
	// into errors. Defaults to 0.
	Timeout time.Duration
	// Attempts, Backoff, SubAgentBudget and TurnBudget describe the layers around the
	// tool (see Layers); when any is set, Wrap checks that Timeout fits and fails with
	// the arithmetic if it does not. Each defaults to 0 (not checked).
	Attempts       int
	Backoff        time.Duration
	SubAgentBudget time.Duration
	TurnBudget     time.Duration
	// OnAbandon, when set, is called when the wrapper gives up on a call that keeps
	// running and again when that call returns (see Abandon), with the call's context.
	// It runs on the call's goroutines, so it must be quick and safe for concurrent
	// use; a panic in it is dropped. Defaults to nil.
	OnAbandon func(context.Context, Abandon)
}

type functionTool = toolwrap.Inner

// Tool is a tool wrapped with a timeout and panic recovery. It is safe for concurrent
// use, as adk-go requires: every call of the tool runs through the same value.
type Tool struct {
	inner   functionTool
	timeout time.Duration

	timeouts  atomic.Int64
	panics    atomic.Int64
	abandoned atomic.Int64 // calls still running after the wrapper gave up on them
	onAbandon func(context.Context, Abandon)
	wired     atomic.Pointer[func(context.Context, Abandon)] // the telemetry's, without onAbandon
}

// Wrap returns t with a per-call timeout and panic recovery. t must be a function tool
// (it has Declaration and Run, as functiontool, agenttool and mcptoolset tools do).
func Wrap(t tool.Tool, cfg Config) (*Tool, error) {
	if t == nil {
		return nil, &ConfigError{Package: "tooltimeout", Field: "tool", Value: "nil", Problem: "is required"}
	}
	ft, ok := t.(functionTool)
	if !ok {
		return nil, &ConfigError{Package: "tooltimeout", Field: "tool", Value: fmt.Sprintf("%T", t),
			Problem: fmt.Sprintf("tool %q has no Declaration and Run methods to wrap", t.Name())}
	}
	if cfg.Timeout < 0 {
		return nil, &ConfigError{Package: "tooltimeout", Field: "Config.Timeout", Value: cfg.Timeout,
			Problem: fmt.Sprintf("must not be negative (tool %q)", t.Name())}
	}
	if cfg.Attempts != 0 || cfg.Backoff != 0 || cfg.SubAgentBudget != 0 || cfg.TurnBudget != 0 {
		l := Layers{ToolTimeout: cfg.Timeout, Attempts: cfg.Attempts, Backoff: cfg.Backoff, SubAgent: cfg.SubAgentBudget, Turn: cfg.TurnBudget}
		if err := l.Validate(); err != nil {
			return nil, layersError(err, func(f string) string { return wrapFields[f] }, "Config.Timeout", cfg.Timeout)
		}
	}
	return &Tool{inner: ft, timeout: cfg.Timeout, onAbandon: cfg.OnAbandon}, nil
}

// wrapFields names the Config field behind each Layers field Wrap checks.
var wrapFields = map[string]string{
	"Layers.ToolTimeout": "Config.Timeout", "Layers.Attempts": "Config.Attempts", "Layers.Backoff": "Config.Backoff",
	"Layers.SubAgent": "Config.SubAgentBudget", "Layers.Turn": "Config.TurnBudget",
}

// MustWrap is Wrap that panics on error.
func MustWrap(t tool.Tool, cfg Config) *Tool {
	w, err := Wrap(t, cfg)
	if err != nil {
		panic(err)
	}
	return w
}

// Name implements tool.Tool.
func (w *Tool) Name() string { return w.inner.Name() }

// Description implements tool.Tool.
func (w *Tool) Description() string { return w.inner.Description() }

// IsLongRunning implements tool.Tool.
func (w *Tool) IsLongRunning() bool { return w.inner.IsLongRunning() }

// Declaration returns the inner tool's declaration.
func (w *Tool) Declaration() *genai.FunctionDeclaration { return w.inner.Declaration() }

// Timeout returns the per-call timeout; 0 means none.
func (w *Tool) Timeout() time.Duration { return w.timeout }

// Unwrap returns the wrapped tool.
func (w *Tool) Unwrap() tool.Tool { return w.inner }

// ProcessRequest runs the inner tool's own request processing, then makes sure the
// wrapper, not the inner tool, is what adk-go dispatches calls to.
func (w *Tool) ProcessRequest(ctx agent.Context, req *model.LLMRequest) error {
	return toolwrap.ProcessRequest(ctx, req, w.inner, w)
}

// Stats counts what the wrapper did over its life.
type Stats struct {
	Timeouts int64
	Panics   int64
	// Abandoned is how many calls that timed out are still running: their tool ignores
	// its context. Each holds a goroutine until it returns.
	Abandoned int64
}

// Stats returns the wrapper's counts now.
func (w *Tool) Stats() Stats {
	return Stats{Timeouts: w.timeouts.Load(), Panics: w.panics.Load(), Abandoned: w.abandoned.Load()}
}

// Run calls the inner tool under the timeout. A call that runs out of time returns a
// *TimeoutError at once, even if the tool ignores its context (it keeps running in the
// background and its result is dropped); a panic becomes a *PanicError. When the
// caller's own context ends first, its error is returned unchanged, so the classify
// package puts it down to the caller.
func (w *Tool) Run(ctx agent.Context, args any) (map[string]any, error) {
	if w.timeout <= 0 {
		return w.call(ctx, args)
	}
	tctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	cctx := &callContext{Context: ctx, ctx: tctx}
	type result struct {
		m   map[string]any
		err error
	}
	done := make(chan result, 1)
	var state atomic.Int32 // running, then finished or abandoned, whichever comes first
	go func() {
		m, err := w.call(cctx, args)
		if !state.CompareAndSwap(running, finished) {
			w.abandoned.Add(-1) // the wrapper gave up on this call earlier
			w.notifyAbandon(ctx, true, err)
		}
		done <- result{m, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-tctx.Done():
		if state.CompareAndSwap(running, abandoned) {
			w.abandoned.Add(1)
			w.notifyAbandon(ctx, false, nil)
			if err := ctx.Err(); err != nil {
				return nil, err // the caller gave up, not our timer
			}
			w.timeouts.Add(1)
			return nil, &TimeoutError{Tool: w.Name(), Limit: w.timeout}
		}
		r = <-done // it finished at the same moment: use its result
	}
	if r.err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		w.timeouts.Add(1)
		return nil, &TimeoutError{Tool: w.Name(), Limit: w.timeout, Err: r.err}
	}
	return r.m, r.err
}

const (
	running int32 = iota
	finished
	abandoned
)

// call runs the inner tool and turns a panic into an error.
func (w *Tool) call(ctx agent.Context, args any) (m map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			w.panics.Add(1)
			m, err = nil, &PanicError{Tool: w.Name(), Value: r, Stack: debug.Stack()}
		}
	}()
	return w.inner.Run(ctx, args)
}

// callContext is the tool's agent.Context with the wrapper's deadline: callbacks cannot
// change the context a tool runs with, so the wrapper must.
type callContext struct {
	agent.Context
	ctx context.Context
}

func (c *callContext) Deadline() (time.Time, bool) { return c.ctx.Deadline() }
func (c *callContext) Done() <-chan struct{}       { return c.ctx.Done() }
func (c *callContext) Err() error                  { return c.ctx.Err() }
func (c *callContext) Value(key any) any           { return c.ctx.Value(key) }
