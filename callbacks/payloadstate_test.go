package callbacks_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/probe"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// TestTheShedPayloadSaysTheShareShed (issue 32b): through the runner, a call the
// throttle holds back is told the share actually shed, read from the throttle after
// the turn: under half, "most calls to it are still sent" and a later try advised;
// above half (the 86%), neither.
func TestTheShedPayloadSaysTheShareShed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		requests, acc int // the window before the turn (K = 1)
	}{
		{"about a third shed", 20, 14},
		{"most calls shed", 20, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := newThrottled(t, nil, breaker.Policy{})
			x.fill(tt.requests, tt.acc)
			// The mix: a tenth Normal calls (first, while the mix is too small to tell
			// priorities apart), then High ones, none Low; built with draws that are
			// never shed, so the window stays as filled. The share shed, taken from the
			// lowest priorities first, then covers every Normal call.
			for i := range 40 {
				pr := throttle.High
				if i < 4 {
					pr = throttle.Normal
				}
				require.True(t, x.th.AllowDraw(pr, math.MaxUint64), "call %d", i)
			}
			turn := x.run(t, context.Background(), nil, searchCall(), breakertest.Text("later"))
			p := turn.FunctionResponses()[0].Response
			require.Equal(t, payloads.TypeShed, p[payloads.KeyResponseType], "%v", p)
			require.Zero(t, x.srv.Requests(), "a shed call is not sent")

			share := x.th.Probability() // the window as the shed call left it
			require.Positive(t, share)
			reason := p[payloads.KeyReason].(string)
			under := share < 0.5
			require.Equal(t, under, p[payloads.KeyRetryAdvised], "retry advised only while most calls are sent (%v shed)", share)
			require.Equal(t, under, strings.Contains(reason, "most calls to it are still sent"), reason)
			pct := toInt64(p["shed_percent"])
			require.InDelta(t, share*100, float64(pct), 1, "shed_percent is the share shed (%v)", share)
			require.Contains(t, reason, fmt.Sprintf("about %d%% of calls to it are being held back", pct))
			if !under {
				require.Contains(t, p[payloads.KeyInstruction], "Do not call this tool again in this turn")
			}
		})
	}
}

// TestARefusalWhileWaitingForAProbeStatesNoZeroDelay (issue 32b): a mutation refused
// because the breaker waits for its probe is not told "retry_after_seconds": 0 beside
// "retry_advised": false; with a prober whose probe just failed, it is told the
// next probe's time.
func TestARefusalWhileWaitingForAProbeStatesNoZeroDelay(t *testing.T) {
	t.Parallel()
	var charges atomic.Int32
	charge := callbackstest.FnTool(t, "charge_card", func(agent.Context, map[string]any) (map[string]any, error) {
		charges.Add(1)
		return map[string]any{"charged": true}, nil
	})
	balance := callbackstest.FnTool(t, "get_balance", func(agent.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"balance": 10}, nil
	})
	f := callbackstest.New(t, callbackstest.Config{
		Tools:     []tool.Tool{charge, balance},
		Deps:      map[string]dependencymap.Dependency{"payments": {Tools: []string{"charge_card", "get_balance"}}},
		Callbacks: callbacks.Config{SideEffects: callbacks.SideEffects{MutatingTools: []string{"charge_card"}}},
		Then:      callbackstest.CallsThenText("charge_card"),
	})
	b := f.Breaker(t, "payments")
	callbackstest.Trip(t, b)

	// Without a prober: the cooldown is over, the probe slot is a read's; nobody
	// knows when that read comes.
	f.Clock.Advance(30 * time.Second)
	resp := f.Run(t, "charge the card").FunctionResponses()[0].Response
	require.Equal(t, payloads.TypeUnavailable, resp[payloads.KeyResponseType], "%v", resp)
	require.Equal(t, false, resp[payloads.KeyRetryAdvised])
	require.NotContains(t, resp, payloads.KeyRetryAfterSeconds, "no time is known: none is stated")
	require.NotContains(t, resp[payloads.KeyReason], "tried again in about")

	// With a prober whose probe fails: the next probe is one interval later, and the
	// refusal says so.
	p := probe.MustNew(probe.Config{Clock: f.Clock, Logger: slog.New(slog.DiscardHandler),
		AfterFunc: func(time.Duration, func()) func() bool { return func() bool { return true } },
		Checks:    []probe.Check{{Breaker: b, Func: func(context.Context) error { return errors.New("connection refused") }}}})
	defer p.Close()
	next := p.ProbeDue(t.Context())
	require.Equal(t, breaker.Open, b.State())
	wait := next.Sub(f.Clock.Now())
	require.Positive(t, wait)
	f.Clock.Advance(4 * time.Second)
	resp = f.Run(t, "charge the card").FunctionResponses()[0].Response
	require.Equal(t, int64((wait-4*time.Second+time.Second-1)/time.Second), toInt64(resp[payloads.KeyRetryAfterSeconds]),
		"the next probe's time: %v", resp)
	require.Zero(t, charges.Load())
	f.RequireClean(t)
}
