package callbacks_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/plugin/retryandreflect"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// rawTool is a hand-written tool with no recovery of its own.
type rawTool struct {
	name string
	run  func(agent.Context) (map[string]any, error)
}

func (r *rawTool) Name() string        { return r.name }
func (r *rawTool) Description() string { return "Raw " + r.name + "." }
func (r *rawTool) IsLongRunning() bool { return false }
func (r *rawTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: r.name, Description: r.Description()}
}
func (r *rawTool) Run(ctx agent.Context, _ any) (map[string]any, error) { return r.run(ctx) }

func TestEveryPermitAndSlotIsReleasedExactlyOnce(t *testing.T) {
	t.Parallel()
	ok := func(agent.Context) (map[string]any, error) { return map[string]any{"status": "ok"}, nil }
	fail := func(agent.Context) (map[string]any, error) { return nil, errBoom }
	cachePlugin := func(t *testing.T) *plugin.Plugin {
		return callbackstest.MustPlugin(t, plugin.Config{Name: "cache", BeforeToolCallback: func(agent.Context, tool.Tool, map[string]any) (map[string]any, error) {
			return map[string]any{"status": "ok", "cached": true}, nil
		}})
	}
	refusePlugin := func(t *testing.T) *plugin.Plugin {
		return callbackstest.MustPlugin(t, plugin.Config{Name: "policy", BeforeToolCallback: func(agent.Context, tool.Tool, map[string]any) (map[string]any, error) {
			return nil, errors.New("policy forbids this call")
		}})
	}
	rewritePlugin := func(t *testing.T) *plugin.Plugin {
		return callbackstest.MustPlugin(t, plugin.Config{Name: "rewrite", AfterToolCallback: func(agent.Context, tool.Tool, map[string]any, map[string]any, error) (map[string]any, error) {
			return map[string]any{"status": "ok", "rewritten": true}, nil
		}})
	}
	tests := []struct {
		name    string
		run     func(agent.Context) (map[string]any, error)
		wrap    bool // wrap the tool with tooltimeout (panic recovery)
		before  func(*testing.T) []*plugin.Plugin
		after   func(*testing.T) []*plugin.Plugin
		marker  bool
		cancel  bool // the tool cancels the turn's context and waits for it
		want    breaker.Verdict
		kind    callbacks.EventKind
		seeText string // in the function response the model gets
		unsent  bool   // the call never reached its tool: no CallOutcome for the Observer
	}{
		{name: "success", run: ok, want: breaker.Success, kind: callbacks.EventCallOutcome},
		{name: "tool error", run: fail, want: breaker.Failure, kind: callbacks.EventCallOutcome},
		{name: "error answered by a plugin after ours", run: fail, want: breaker.Failure, kind: callbacks.EventCallOutcome,
			after:   func(*testing.T) []*plugin.Plugin { return []*plugin.Plugin{retryandreflect.MustNew()} },
			seeText: "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"},
		{name: "error answered by a plugin before ours", run: fail, want: breaker.Ignore, kind: callbacks.EventMisordered,
			before:  func(*testing.T) []*plugin.Plugin { return []*plugin.Plugin{retryandreflect.MustNew()} },
			seeText: "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"},
		{name: "a later plugin answers instead of the tool (marker)", run: fail, want: breaker.Ignore, kind: callbacks.EventCallOutcome,
			after: func(t *testing.T) []*plugin.Plugin { return []*plugin.Plugin{cachePlugin(t)} }, marker: true, seeText: "cached", unsent: true},
		{name: "a later plugin answers instead of the tool (no marker)", run: fail, want: breaker.Success, kind: callbacks.EventCallOutcome,
			after: func(t *testing.T) []*plugin.Plugin { return []*plugin.Plugin{cachePlugin(t)} }, seeText: "cached"},
		{name: "a later plugin refuses with an error (marker)", run: ok, want: breaker.Ignore, kind: callbacks.EventCallOutcome,
			after: func(t *testing.T) []*plugin.Plugin { return []*plugin.Plugin{refusePlugin(t)} }, marker: true, seeText: "policy forbids", unsent: true},
		{name: "panic in a function tool", run: func(agent.Context) (map[string]any, error) { panic("tool bug") },
			want: breaker.Failure, kind: callbacks.EventCallOutcome},
		{name: "panic in a wrapped raw tool", run: func(agent.Context) (map[string]any, error) { panic("tool bug") }, wrap: true,
			want: breaker.Failure, kind: callbacks.EventCallOutcome, seeText: "response_type=agentbreaker.failed"},
		{name: "the turn's context is cancelled", cancel: true, want: breaker.Ignore, kind: callbacks.EventCallOutcome},
		{name: "an earlier plugin's after-callback answers first", run: fail, want: breaker.Ignore, kind: callbacks.EventOrphanReleased,
			before: func(t *testing.T) []*plugin.Plugin { return []*plugin.Plugin{rewritePlugin(t)} }, seeText: "rewritten"},
	}
	for _, tt := range tests {
		for _, probe := range []bool{false, true} {
			name := tt.name + map[bool]string{false: "/closed", true: "/probe"}[probe]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				run := tt.run
				if tt.cancel {
					run = func(c agent.Context) (map[string]any, error) {
						cancel()
						<-c.Done()
						return nil, c.Err()
					}
				}
				var tl tool.Tool = &rawTool{name: "lookup", run: run}
				if tt.wrap {
					tl = tooltimeout.MustWrap(tl, tooltimeout.Config{})
				} else {
					tl = callbackstest.FnTool(t, "lookup", func(c agent.Context, _ map[string]any) (map[string]any, error) { return run(c) })
				}
				fc := callbackstest.Config{
					Tools: []tool.Tool{tl}, Then: callbackstest.CallsThenText("lookup"), Marker: tt.marker,
					Deps:      map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
					Callbacks: callbacks.Config{Bulkheads: callbacks.Bulkheads{Limits: map[string]int{"crm": 1}}},
				}
				if tt.before != nil {
					fc.Before = tt.before(t)
				}
				if tt.after != nil {
					fc.After = tt.after(t)
				}
				f := callbackstest.New(t, fc)
				b := f.Breaker(t, "crm")
				if probe {
					for range 4 {
						p, err := b.Allow()
						require.NoError(t, err)
						p.Failure()
					}
					require.Equal(t, breaker.Open, b.State())
					f.Clock.Advance(callbackstest.Policy.Cooldown)
				}
				turn, err := f.Harness.Run(ctx, f.Session, "go")
				if tt.cancel {
					require.ErrorIs(t, err, context.Canceled)
				} else {
					require.NoError(t, err)
				}
				if rs := turn.FunctionResponses(); !tt.cancel {
					// (A cancelled run may stop before it hands the response back.)
					require.Len(t, rs, 1)
					if tt.seeText != "" {
						require.Contains(t, fmtResponse(rs[0]), tt.seeText)
					}
				}
				require.Len(t, f.Events.Of(tt.kind), 1, "events: %v", f.Events.Kinds())
				f.RequireClean(t)
				// The Observer hears of the call once if it reached its tool, never if not,
				// with the call's own tool context; nothing here was refused locally.
				o := f.Obs.Snapshot()
				require.Empty(t, o.Shorts)
				require.Empty(t, o.Rejected)
				if tt.unsent {
					require.Empty(t, o.Calls)
				} else {
					require.Len(t, o.Calls, 1)
					c := o.Calls[0]
					require.Equal(t, "crm", c.V.Dependency)
					require.Equal(t, "lookup", c.V.Tool)
					require.Equal(t, probe, c.V.Probe)
					require.Equal(t, f.Events.Of(tt.kind)[0].Outcome, c.V.Outcome)
					require.Equal(t, f.Events.Of(tt.kind)[0].Class, c.V.Class)
					require.NotEmpty(t, c.V.RequestID)
					require.Equal(t, c.InvocationID, c.V.RequestID, "request_id is the invocation")
					require.NotEmpty(t, c.CallID, "reported with the call's tool context")
				}
				s := b.Snapshot()
				if !probe {
					switch tt.want {
					case breaker.Success:
						require.Equal(t, breaker.Counts{Calls: 1}, s.Window)
					case breaker.Failure:
						require.Equal(t, breaker.Counts{Calls: 1, Failures: 1}, s.Window)
					case breaker.Ignore:
						require.Equal(t, breaker.Counts{}, s.Window)
					}
					return
				}
				wantState := map[breaker.Verdict]breaker.State{breaker.Success: breaker.Closed, breaker.Failure: breaker.Open, breaker.Ignore: breaker.HalfOpen}[tt.want]
				require.Equal(t, wantState, s.State)
				if tt.want == breaker.Ignore {
					p, err := b.Allow()
					require.NoError(t, err, "the probe slot was given back")
					p.Success()
					require.Equal(t, breaker.Closed, b.State())
				}
			})
		}
	}
}

func fmtResponse(fr *genai.FunctionResponse) string {
	var sb []byte
	for k, v := range fr.Response {
		sb = append(sb, []byte(k+"="+toString(v)+";")...)
	}
	return string(sb)
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		if v {
			return "true"
		}
		return "false"
	}
	return ""
}
