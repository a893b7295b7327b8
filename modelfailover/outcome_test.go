package modelfailover_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// Safety blocks and invalid arguments prove the endpoint works: they are recorded
// as successes, and no other route is asked.
func TestRefusalsAreHealthyAndDoNotFailOver(t *testing.T) {
	tests := []struct {
		name         string
		reply        geminifake.Reply
		wantErrCode  string
		wantAPIError int
	}{
		{name: "candidate blocked for safety", reply: geminifake.Reply{FinishReason: genai.FinishReasonSafety},
			wantErrCode: "SAFETY"},
		{name: "prompt blocked", reply: geminifake.Reply{BlockReason: genai.BlockedReasonProhibitedContent},
			wantErrCode: "PROHIBITED_CONTENT"},
		{name: "400 invalid argument", reply: geminifake.Reply{Fail: &geminifake.Failure{Code: 400, Message: "bad schema"}},
			wantAPIError: 400},
	}
	for _, tt := range tests {
		for _, streaming := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: "", true: " streaming"}[streaming], func(t *testing.T) {
				a, b := twoRegions(t)
				h := newHarness(t, harnessConfig{regions: []*region{a, b}})
				require.NoError(t, a.server.SetReply(tt.reply))
				for range 3 {
					res := h.turn(t.Context(), newSession(), streaming)
					switch {
					case tt.reply.BlockReason != "" && !streaming:
						// adk's Gemini model turns an answer without candidates into
						// a bare error; the endpoint still answered.
						require.EqualError(t, res.err, "empty response")
					case tt.wantAPIError != 0:
						var apiErr genai.APIError
						require.ErrorAs(t, res.err, &apiErr)
						assert.Equal(t, tt.wantAPIError, apiErr.Code)
						assert.NotErrorIs(t, res.err, modelfailover.ErrAllRoutesFailed, "returned as the model gave it")
					default:
						require.NoError(t, res.err)
						assert.Contains(t, res.errCodes, tt.wantErrCode)
						assert.Equal(t, routeA, res.last.CustomMetadata[modelfailover.MetaRoute])
					}
				}
				assert.Equal(t, []int{3, 0}, h.counts())
				w := h.breaker(a).Snapshot().Window
				assert.Equal(t, int64(3), w.Calls)
				assert.Zero(t, w.Failures)
				assert.Equal(t, breaker.Closed, h.breaker(a).State())
				assert.Empty(t, h.events.failovers())
			})
		}
	}
}

// manualCtx is a turn context whose end the test decides: its Err is
// DeadlineExceeded once expired, as when the turn's own deadline passes.
type manualCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
	err  error
}

func newManualCtx(err error) *manualCtx {
	return &manualCtx{Context: context.Background(), done: make(chan struct{}), err: err}
}

func (c *manualCtx) Deadline() (time.Time, bool) { return time.Now().Add(time.Hour), true }
func (c *manualCtx) Done() <-chan struct{}       { return c.done }
func (c *manualCtx) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}
func (c *manualCtx) end() { c.once.Do(func() { close(c.done) }) }

// The caller's own cancellation or deadline says nothing about the route: it is
// not counted, it does not fail over, and a probe it interrupted is given back.
func TestCallerEndingTheTurnIsNeutral(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{{"deadline", context.DeadlineExceeded}, {"cancel", context.Canceled}} {
		for _, callbacks := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: " callbacks"}[callbacks], func(t *testing.T) {
				a, b := twoRegions(t)
				hc := harnessConfig{regions: []*region{a, b}}
				if callbacks {
					hc.agentModelFor = func(f *modelfailover.Failover) model.LLM { return a.llmThrough(t, f) }
					hc.routes = []modelfailover.Route{{Model: pro, Region: a.name}, b.route()}
				}
				h := newHarness(t, hc)
				a.fail(t, geminifake.Failure{Code: 503})
				for range 2 {
					require.NoError(t, h.turn(t.Context(), newSession(), false).err)
				}
				require.Equal(t, breaker.Open, h.breaker(a).State())
				h.clock.Advance(30 * time.Second)
				a.server.Recover()
				gate := geminifake.NewGate(0)
				require.NoError(t, a.server.Enqueue(geminifake.Reply{Gate: gate}))

				ctx := newManualCtx(tc.err)
				done := make(chan result)
				go func() { done <- h.turn(ctx, newSession(), false) }()
				<-gate.Arrived() // the probe is at A
				ctx.end()
				res := testwait.Recv(t, done, "the turn's result")
				require.Error(t, res.err)
				assert.Equal(t, []int{3, 2}, h.counts(), "no failover for a caller who left")
				assert.Equal(t, breaker.HalfOpen, h.breaker(a).State())

				// The probe slot was given back at once: the next turn probes A
				// without waiting for the lease to run out.
				res = h.turn(t.Context(), newSession(), false)
				require.NoError(t, res.err)
				assert.Equal(t, []string{"answer from us-central1"}, res.finals)
				assert.Equal(t, []int{4, 2}, h.counts())
				assert.Equal(t, breaker.Closed, h.breaker(a).State())
				assert.Zero(t, h.f.Pending())
			})
		}
	}
}

// A per-attempt timeout is the route's failure: it counts and the call fails over.
// Config.AttemptTimeout runs on the injected clock; a timeout the agent's own
// callback puts in the request's HTTP options runs on genai's system timer, so that
// case is the one test that waits for real time (150ms).
func TestAttemptTimeoutCountsAndFailsOver(t *testing.T) {
	const timeout = 150 * time.Millisecond
	setTimeout := func(ctx agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
		if req.Config == nil {
			req.Config = &genai.GenerateContentConfig{}
		}
		d := timeout
		req.Config.HTTPOptions = &genai.HTTPOptions{Timeout: &d}
		return nil, nil
	}
	tests := []struct {
		name      string
		hc        func(*harnessConfig)
		fakeClock bool
	}{
		{name: "Config.AttemptTimeout", fakeClock: true, hc: func(hc *harnessConfig) {
			hc.mutate = func(c *modelfailover.Config) { c.AttemptTimeout = timeout }
		}},
		{name: "Config.AttemptTimeout, callbacks", fakeClock: true, hc: func(hc *harnessConfig) {
			hc.mutate = func(c *modelfailover.Config) { c.AttemptTimeout = timeout }
			r0 := hc.regions[0]
			hc.agentModelFor = func(f *modelfailover.Failover) model.LLM { return r0.llmThrough(t, f) }
			hc.routes = []modelfailover.Route{{Model: pro, Region: hc.regions[0].name}, hc.regions[1].route()}
		}},
		{name: "set by the agent's own callback", hc: func(hc *harnessConfig) {
			hc.agentCfg = func(c *llmagent.Config) { c.BeforeModelCallbacks = []llmagent.BeforeModelCallback{setTimeout} }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := twoRegions(t)
			hc := harnessConfig{regions: []*region{a, b}}
			tt.hc(&hc)
			h := newHarness(t, hc)
			gate := geminifake.NewGate(0)
			require.NoError(t, a.server.Enqueue(geminifake.Reply{Gate: gate})) // never answers
			if tt.fakeClock {
				go func() {
					<-gate.Arrived()
					h.clock.waitArmed(1)
					h.clock.Advance(timeout)
				}()
			}
			res := h.turn(t.Context(), newSession(), false)
			require.NoError(t, res.err)
			assert.Equal(t, []string{"answer from europe-west1"}, res.finals)
			assert.Equal(t, []int{1, 1}, h.counts())
			w := h.breaker(a).Snapshot().Window
			assert.Equal(t, int64(1), w.Failures)
			assert.Empty(t, h.events.failovers(), "a per-call fallback, not a failover")
			calls := h.events.callList()
			require.Len(t, calls, 1)
			assert.Equal(t, modelfailover.Cause("timeout"), calls[0].FallbackCause)
		})
	}
}

// Issue 13e: an answer with nothing in it ("{}": no candidates, no prompt
// feedback) is the endpoint's failure, decided from the answer itself: it counts
// and the call fails over. A blocked prompt (TestRefusalsAreHealthyAndDoNotFailOver)
// stays healthy.
func TestEmptyAnswerCountsAndFailsOver(t *testing.T) {
	for _, tc := range []struct {
		name      string
		streaming bool
		callbacks bool
	}{
		{name: "whole"}, {name: "streaming", streaming: true}, {name: "callbacks", callbacks: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := twoRegions(t)
			hc := harnessConfig{regions: []*region{a, b}}
			if tc.callbacks {
				hc.agentModelFor = func(f *modelfailover.Failover) model.LLM { return a.llmThrough(t, f) }
				hc.routes = []modelfailover.Route{{Model: pro, Region: a.name}, b.route()}
			}
			h := newHarness(t, hc)
			require.NoError(t, a.server.SetReply(geminifake.Reply{Empty: true}))
			res := h.turn(t.Context(), newSession(), tc.streaming)
			require.NoError(t, res.err)
			assert.Equal(t, []string{"answer from europe-west1"}, res.finals)
			assert.Equal(t, routeB, res.last.CustomMetadata[modelfailover.MetaRoute])
			assert.Equal(t, []int{1, 1}, h.counts())
			assert.Equal(t, int64(1), h.breaker(a).Snapshot().Window.Failures, "nothing at all counts")
			calls := h.events.callList()
			require.Len(t, calls, 1)
			assert.Equal(t, modelfailover.ServedFallback, calls[0].ServedBy)
			assert.Equal(t, modelfailover.Cause("unclassified"), calls[0].FallbackCause)
		})
	}
}
