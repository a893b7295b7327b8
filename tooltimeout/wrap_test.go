package tooltimeout_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// callCtx is the agent.Context a tool receives, reduced to the context.Context part
// these tools use; the rest of agent.Context is never called.
type callCtx struct {
	agent.Context
	ctx context.Context
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.ctx.Deadline() }
func (c *callCtx) Done() <-chan struct{}       { return c.ctx.Done() }
func (c *callCtx) Err() error                  { return c.ctx.Err() }
func (c *callCtx) Value(k any) any             { return c.ctx.Value(k) }

// rawTool is a hand-written tool.Tool (no functiontool recovery around it).
type rawTool struct {
	name string
	run  func(agent.Context) (map[string]any, error)
}

func (r *rawTool) Name() string        { return r.name }
func (r *rawTool) Description() string { return "raw " + r.name }
func (r *rawTool) IsLongRunning() bool { return false }
func (r *rawTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: r.name, Description: r.Description()}
}
func (r *rawTool) Run(ctx agent.Context, _ any) (map[string]any, error) { return r.run(ctx) }

func TestWrapConfigErrors(t *testing.T) {
	t.Parallel()
	ok := &rawTool{name: "t", run: func(agent.Context) (map[string]any, error) { return nil, nil }}
	tests := []struct {
		name    string
		tool    tool.Tool
		cfg     tooltimeout.Config
		wantErr string
	}{
		{"nil", nil, tooltimeout.Config{}, "tooltimeout: tool = nil: is required"},
		{"not runnable", notRunnable{}, tooltimeout.Config{}, `tooltimeout: tool = tooltimeout_test.notRunnable: tool "bare" has no Declaration and Run methods to wrap`},
		{"negative", ok, tooltimeout.Config{Timeout: -time.Second}, `tooltimeout: Config.Timeout = -1s: must not be negative (tool "t")`},
		{"does not fit", ok, tooltimeout.Config{Timeout: 5 * time.Second, Attempts: 3, Backoff: 1500 * time.Millisecond, SubAgentBudget: 10 * time.Second},
			`tooltimeout: Config.Timeout = 5s: layered timeouts do not fit: tool timeout 5s × 3 attempts + backoff 1.5s = 16.5s, more than the sub-agent budget 10s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := tooltimeout.Wrap(tt.tool, tt.cfg)
			require.Nil(t, w)
			require.EqualError(t, err, tt.wantErr)
		})
	}
	require.Panics(t, func() { tooltimeout.MustWrap(nil, tooltimeout.Config{}) })
}

type notRunnable struct{}

func (notRunnable) Name() string        { return "bare" }
func (notRunnable) Description() string { return "" }
func (notRunnable) IsLongRunning() bool { return false }

func TestTimeouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		run       func(release chan struct{}) func(agent.Context) (map[string]any, error)
		cancel    bool // the caller's context is cancelled at 2s
		wantErr   func(*testing.T, error)
		wantAfter time.Duration
		wantClass classify.Class
		abandoned int64
	}{
		{
			name: "tool honours its context",
			run: func(chan struct{}) func(agent.Context) (map[string]any, error) {
				return func(ctx agent.Context) (map[string]any, error) { <-ctx.Done(); return nil, ctx.Err() }
			},
			wantErr: func(t *testing.T, err error) {
				var te *tooltimeout.TimeoutError
				require.ErrorAs(t, err, &te)
				require.Equal(t, 5*time.Second, te.Limit)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				require.EqualError(t, err, `tooltimeout: tool "slow" did not finish within 5s`)
			},
			wantAfter: 5 * time.Second, wantClass: classify.ClassTimeout,
		},
		{
			name: "tool ignores its context",
			run: func(release chan struct{}) func(agent.Context) (map[string]any, error) {
				return func(agent.Context) (map[string]any, error) { <-release; return map[string]any{"late": true}, nil }
			},
			wantErr:   func(t *testing.T, err error) { require.IsType(t, &tooltimeout.TimeoutError{}, err) },
			wantAfter: 5 * time.Second, wantClass: classify.ClassTimeout, abandoned: 1,
		},
		{
			name: "the caller gives up first",
			run: func(chan struct{}) func(agent.Context) (map[string]any, error) {
				return func(ctx agent.Context) (map[string]any, error) { <-ctx.Done(); return nil, ctx.Err() }
			},
			cancel:    true,
			wantErr:   func(t *testing.T, err error) { require.ErrorIs(t, err, context.Canceled) },
			wantAfter: 2 * time.Second, wantClass: classify.ClassCanceled,
		},
		{
			name: "the caller gives up on a tool that ignores it",
			run: func(release chan struct{}) func(agent.Context) (map[string]any, error) {
				return func(agent.Context) (map[string]any, error) { <-release; return nil, nil }
			},
			cancel:    true,
			wantErr:   func(t *testing.T, err error) { require.ErrorIs(t, err, context.Canceled) },
			wantAfter: 2 * time.Second, wantClass: classify.ClassCanceled, abandoned: 1,
		},
		{
			name: "panic",
			run: func(chan struct{}) func(agent.Context) (map[string]any, error) {
				return func(agent.Context) (map[string]any, error) { panic("secret internal state") }
			},
			wantErr: func(t *testing.T, err error) {
				var pe *tooltimeout.PanicError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, "secret internal state", pe.Value)
				require.NotEmpty(t, pe.Stack)
				require.NotContains(t, err.Error(), "secret", "the panic value is for logs, not the model")
			},
			wantClass: classify.ClassUnclassified,
		},
		{
			name: "fast success",
			run: func(chan struct{}) func(agent.Context) (map[string]any, error) {
				return func(agent.Context) (map[string]any, error) { return map[string]any{"ok": true}, nil }
			},
			wantErr:   func(t *testing.T, err error) { require.NoError(t, err) },
			wantClass: classify.ClassNone,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				w := tooltimeout.MustWrap(&rawTool{name: "slow", run: tt.run(release)}, tooltimeout.Config{Timeout: 5 * time.Second})
				parent, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.cancel {
					time.AfterFunc(2*time.Second, cancel)
				}
				ctx := &callCtx{ctx: parent}
				start := time.Now()
				_, err := w.Run(ctx, map[string]any{})
				require.Equal(t, tt.wantAfter, time.Since(start))
				tt.wantErr(t, err)
				c := classify.Error(ctx, err)
				require.Equal(t, tt.wantClass, c.Class)
				if tt.wantClass == classify.ClassTimeout {
					require.Equal(t, classify.Unknown, c.Outcome)
					require.Equal(t, classify.Counts, c.Verdict)
				}
				if tt.abandoned > 0 {
					// A tool that honours its context may return at the same instant the
					// wrapper gives up on it, so only the ignoring ones are checked here.
					require.Equal(t, tt.abandoned, w.Stats().Abandoned)
				}
				close(release)
				synctest.Wait()
				require.Zero(t, w.Stats().Abandoned, "an abandoned call is no longer counted once it returns")
			})
		})
	}
}

func TestNoTimeoutOnlyRecoversPanics(t *testing.T) {
	t.Parallel()
	w := tooltimeout.MustWrap(&rawTool{name: "p", run: func(agent.Context) (map[string]any, error) { panic(errors.New("boom")) }}, tooltimeout.Config{})
	_, err := w.Run(&callCtx{ctx: context.Background()}, nil)
	require.EqualError(t, err, `tooltimeout: tool "p" panicked`)
	require.Equal(t, tooltimeout.Stats{Panics: 1}, w.Stats())
}

// packer is a tool with request processing of its own beyond packing itself.
type packer struct{ rawTool }

func (p *packer) ProcessRequest(_ agent.Context, req *model.LLMRequest) error {
	if req.Tools == nil {
		req.Tools = map[string]any{}
	}
	req.Tools[p.name] = p
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	req.Config.Labels = map[string]string{"packed_by": p.name}
	req.Config.Tools = append(req.Config.Tools, &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{p.Declaration()}})
	return nil
}

func TestProcessRequestKeepsTheInnerToolsProcessing(t *testing.T) {
	t.Parallel()
	ft, err := functiontool.New(functiontool.Config{Name: "fn", Description: "d"}, func(agent.Context, struct{}) (map[string]any, error) { return nil, nil })
	require.NoError(t, err)
	p := &packer{rawTool{name: "custom"}}
	raw := &rawTool{name: "raw"}
	req := &model.LLMRequest{}
	for _, inner := range []tool.Tool{ft, p, raw} {
		w := tooltimeout.MustWrap(inner, tooltimeout.Config{Timeout: time.Second})
		require.NoError(t, w.ProcessRequest(nil, req))
		require.Same(t, w, req.Tools[inner.Name()], "%s: the wrapper is what gets dispatched", inner.Name())
		require.Same(t, inner, w.Unwrap())
	}
	require.Equal(t, "custom", req.Config.Labels["packed_by"], "the inner tool's own processing ran")
	var names []string
	for _, gt := range req.Config.Tools {
		for _, d := range gt.FunctionDeclarations {
			names = append(names, d.Name)
		}
	}
	require.ElementsMatch(t, []string{"fn", "custom", "raw"}, names, "each declaration once")
}
