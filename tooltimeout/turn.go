package tooltimeout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"
)

// ErrTurnDeadline is returned, wrapped, by Turn.Run when the whole-turn deadline ended
// the turn. It also matches context.DeadlineExceeded.
var ErrTurnDeadline = fmt.Errorf("tooltimeout: turn deadline exceeded: %w", context.DeadlineExceeded)

// TurnConfig configures a [Turn].
type TurnConfig struct {
	// Runner runs the turn. Required.
	Runner *runner.Runner
	// Timeout is the whole-turn budget. Required; at least 1ms.
	Timeout time.Duration
	// Grace is how long Run waits, after the deadline, for the run to wind down (tools
	// that honour their context return at once). A run still going after that is left
	// to finish in the background and Run returns. Defaults to 0: return at the
	// deadline.
	Grace time.Duration
	// Sessions, AppName: when Sessions is set, a turn that hit its deadline has its
	// orphan function calls (calls without a response, which the next turn would send
	// back to the model) answered with an outcome-unknown payload once the run has
	// ended. AppName is required with Sessions.
	Sessions session.Service
	AppName  string
	// MutatingTools and DependencyOf shape the answers to orphan calls (see Orphans):
	// a read-only tool's call cut by the deadline is not told "do not repeat", and the
	// answer names the tool's real dependency. Default to nil: every orphan answer is
	// outcome-unknown and names the tool.
	MutatingTools []string
	DependencyOf  func(tool string) (string, bool)
	// Tools are the agent's tools. Each that has a timeout (a *Tool from Wrap) is
	// checked at construction against Timeout: a whole-turn deadline shorter than a
	// tool's timeout ends every hang as the turn's deadline, which is neutral, so a
	// hanging dependency would never trip its breaker. Give Tools, Toolsets or Layers
	// (or several); NewTurn refuses a configuration with none, which it could not
	// check.
	Tools []tool.Tool
	// Toolsets are the agent's tool sets (llmagent.Config.Toolsets). Their tools are
	// listed only when a turn starts, so each that is a BoundedToolset (an
	// mcpguard.Toolset is) has its per-call timeout checked against Timeout at
	// construction, as Tools are; others are not checked. Defaults to none.
	Toolsets []tool.Toolset
	// RunConfig is passed to every run. Defaults to the zero RunConfig.
	RunConfig agent.RunConfig
	// Layers, when set, are validated against Timeout at construction: each must fit
	// inside the turn. Defaults to none.
	Layers []Layers
}

// Turn runs turns under a whole-turn deadline. The deadline is enforced where the
// runner is invoked, not as an agent setting: a context with the deadline is given to
// the run, and the run is drained (never abandoned mid-iteration, which would leave the
// session half-written) until it ends or the grace period is over. It is safe for
// concurrent use.
type Turn struct {
	cfg TurnConfig
}

// NewTurn checks the configuration, including that the timeout of every tool in Tools
// and every BoundedToolset in Toolsets, and every Layers, fits in the turn. An invalid
// value is a *ConfigError naming the field; one that does not fit unwraps to ErrLayers.
func NewTurn(cfg TurnConfig) (*Turn, error) {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "tooltimeout", Field: field, Value: v, Problem: problem}
	}
	if cfg.Runner == nil {
		return nil, bad("TurnConfig.Runner", "nil", "required")
	}
	if cfg.Timeout < time.Millisecond {
		return nil, bad("TurnConfig.Timeout", cfg.Timeout, "must be at least 1ms")
	}
	if cfg.Grace < 0 {
		return nil, bad("TurnConfig.Grace", cfg.Grace, "must not be negative")
	}
	if cfg.Sessions != nil && cfg.AppName == "" {
		return nil, bad("TurnConfig.AppName", cfg.AppName, "required with Sessions")
	}
	if len(cfg.Tools) == 0 && len(cfg.Toolsets) == 0 && len(cfg.Layers) == 0 {
		return nil, bad("TurnConfig.Tools", cfg.Tools, fmt.Sprintf("is empty and so are TurnConfig.Toolsets and TurnConfig.Layers: give the agent's tools and tool sets (or their Layers) so their timeouts can be checked against TurnConfig.Timeout %s", cfg.Timeout))
	}
	for i, t := range cfg.Tools {
		field := fmt.Sprintf("TurnConfig.Tools[%d]", i)
		if t == nil {
			return nil, bad(field, "nil", "tool is nil")
		}
		tt, ok := t.(interface{ Timeout() time.Duration })
		if !ok || tt.Timeout() <= 0 {
			continue
		}
		if err := (Layers{ToolTimeout: tt.Timeout(), Turn: cfg.Timeout}).Validate(); err != nil {
			// A positive timeout and turn leave only the fit to fail.
			ce := layersError(err, nil, field, tt.Timeout())
			ce.Problem = fmt.Sprintf("tool %q against TurnConfig.Timeout %s: %s", t.Name(), cfg.Timeout, ce.Problem)
			return nil, ce
		}
	}
	if err := checkToolsets(cfg.Toolsets, cfg.Timeout); err != nil {
		return nil, err
	}
	for i, l := range cfg.Layers {
		field := fmt.Sprintf("TurnConfig.Layers[%d]", i)
		if l.Turn == 0 {
			l.Turn = cfg.Timeout
		}
		if l.Turn != cfg.Timeout {
			return nil, bad(field+".Turn", l.Turn, fmt.Sprintf("differs from TurnConfig.Timeout %s", cfg.Timeout))
		}
		if err := l.Validate(); err != nil {
			rename := func(f string) string { return field + strings.TrimPrefix(f, "Layers") }
			return nil, layersError(err, rename, field, cfg.Layers[i])
		}
	}
	return &Turn{cfg: cfg}, nil
}

// MustNewTurn is NewTurn that panics on error.
func MustNewTurn(cfg TurnConfig) *Turn {
	t, err := NewTurn(cfg)
	if err != nil {
		panic(err)
	}
	return t
}

// TurnResult is what one turn produced. Its fields are set before Run returns and not
// changed after, except that Done is closed later.
type TurnResult struct {
	// Events are the events yielded before Run returned.
	Events []*session.Event
	// TimedOut reports that the deadline ended the turn.
	TimedOut bool
	// Abandoned reports that the run was still going when Run returned (a tool ignores
	// its context); it finishes in the background.
	Abandoned bool
	// Done is closed once the run has ended and any orphan calls were answered.
	Done <-chan struct{}
}

// Run runs one turn. It returns the first error the runner yielded, or an error
// wrapping ErrTurnDeadline when the deadline ended the turn.
func (t *Turn) Run(ctx context.Context, userID, sessionID string, msg *genai.Content) (*TurnResult, error) {
	runCtx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	// Cancelled only when Run returns, so runCtx.Done means the deadline or the caller.
	defer cancel()
	type item struct {
		ev  *session.Event
		err error
	}
	items := make(chan item)
	ended := make(chan struct{})
	done := make(chan struct{})
	res := &TurnResult{Done: done}
	var invocationID string
	go func() {
		defer close(done)
		for ev, err := range t.cfg.Runner.Run(runCtx, userID, sessionID, msg, t.cfg.RunConfig) {
			select {
			case items <- item{ev, err}:
			case <-ended: // Run has returned: keep draining so adk finishes its bookkeeping
			}
			if ev != nil && invocationID == "" {
				invocationID = ev.InvocationID
			}
		}
		close(items)
		if errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil && t.cfg.Sessions != nil && invocationID != "" {
			// Best effort: the turn already failed; a store error here has nowhere better to go.
			_, _ = CloseOrphansWith(context.WithoutCancel(ctx), t.cfg.Sessions, Orphans{
				AppName: t.cfg.AppName, UserID: userID, SessionID: sessionID, InvocationID: invocationID,
				MutatingTools: t.cfg.MutatingTools, DependencyOf: t.cfg.DependencyOf,
			})
		}
	}()
	var firstErr error
	var grace <-chan time.Time
	deadline := runCtx.Done()
	for {
		select {
		case it, ok := <-items:
			if !ok {
				return res, t.finish(ctx, runCtx, res, firstErr)
			}
			if it.err != nil && firstErr == nil {
				firstErr = it.err
			}
			if it.ev != nil {
				res.Events = append(res.Events, it.ev)
			}
		case <-deadline:
			deadline = nil
			timer := time.NewTimer(t.cfg.Grace)
			defer timer.Stop()
			grace = timer.C
		case <-grace:
			close(ended)
			res.Abandoned = true
			return res, t.finish(ctx, runCtx, res, firstErr)
		}
	}
}

func (t *Turn) finish(ctx, runCtx context.Context, res *TurnResult, firstErr error) error {
	if ctx.Err() == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		res.TimedOut = true
		return fmt.Errorf("%w after %s", ErrTurnDeadline, t.cfg.Timeout)
	}
	return firstErr
}
