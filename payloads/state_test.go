package payloads_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// TestEveryPayloadsWordsFollowItsState (issue 32b): for every payload kind and every
// state it may describe (a delay known or not, the loop guard firm or not, a cached
// answer or none, for a shed call the share shed), what the payload says is derived
// from that state: the expectations below are computed from the state, not copied
// from the output.
func TestEveryPayloadsWordsFollowItsState(t *testing.T) {
	t.Parallel()
	kinds := []struct {
		kind  string
		build func(payloads.Info) map[string]any
	}{
		{payloads.TypeUnavailable, payloads.Unavailable},
		{payloads.TypeBusy, payloads.Busy},
		{payloads.TypeBudgetExhausted, payloads.BudgetExhausted},
		{payloads.TypeOutcomeUnknown, payloads.OutcomeUnknown},
		{payloads.TypeFailed, payloads.Failed},
		{payloads.TypeShed, payloads.Shed},
	}
	// retry_after: 0 is a breaker waiting for its probe (or forced open): no time known.
	delays := []time.Duration{0, -time.Second, 20 * time.Second, 1500 * time.Millisecond}
	shares := []float64{0, 0.004, 0.2, 0.499, 0.5, 0.86, 0.999, 1, math.NaN(), -0.3, 1.7}
	for _, k := range kinds {
		for _, delay := range delays {
			for _, firm := range []bool{false, true} {
				for _, cached := range []bool{false, true} {
					for _, share := range shares {
						if k.kind != payloads.TypeShed && share != 0 {
							continue // only a shed payload has a share
						}
						in := payloads.Info{Dependency: "search", Tool: "web_search", Class: classify.ClassHTTP5xx,
							RetryAfter: delay, Firm: firm, ShortCircuits: 3, Shed: share}
						if cached {
							in.Cached = &payloads.Cached{Result: map[string]any{"hits": 3}, Age: 5 * time.Minute}
						}
						name := fmt.Sprintf("%s/retry_after=%s/firm=%v/cached=%v/shed=%v", k.kind, delay, firm, cached, share)
						t.Run(name, func(t *testing.T) {
							checkWords(t, k.kind, in, k.build(in))
						})
					}
				}
			}
		}
	}
}

func checkWords(t *testing.T, kind string, in payloads.Info, m map[string]any) {
	t.Helper()
	reason, _ := m[payloads.KeyReason].(string)
	instr, _ := m[payloads.KeyInstruction].(string)
	require.Equal(t, kind, m[payloads.KeyResponseType])

	// retry_after_seconds: the delay, rounded up, when one is known and the action may
	// be repeated at all; otherwise absent. Never a 0.
	wantSecs := int64(math.Ceil(in.RetryAfter.Seconds()))
	secs, has := m[payloads.KeyRetryAfterSeconds]
	if in.RetryAfter > 0 && kind != payloads.TypeOutcomeUnknown {
		require.True(t, has, "a known delay is stated")
		require.Equal(t, wantSecs, secs)
		require.Contains(t, reason, fmt.Sprintf("It may be tried again in about %d seconds.", wantSecs))
	} else {
		require.False(t, has, "no delay known (or none applies): no retry_after_seconds, got %v", secs)
		require.NotContains(t, reason, "tried again in about")
	}

	// The share shed, for a shed payload: clean it as the payload must (NaN or
	// negative is not known, above 1 is all).
	share := in.Shed
	if math.IsNaN(share) || share < 0 {
		share = 0
	}
	share = min(share, 1)
	mostHeld := kind == payloads.TypeShed && share >= 0.5

	// retry_advised: only a shed call that is not firm and of which most calls are
	// still sent (or whose share is not known) is worth trying again later.
	wantAdvised := kind == payloads.TypeShed && !in.Firm && !mostHeld
	require.Equal(t, wantAdvised, m[payloads.KeyRetryAdvised])
	if !wantAdvised {
		for _, invite := range []string{"try once more", "call the tool once more"} {
			if kind == payloads.TypeShed && in.RetryAfter > 0 && !in.Firm && !mostHeld {
				continue
			}
			require.NotContains(t, instr, invite, "no retry is advised, so none is invited")
		}
	}

	if kind == payloads.TypeShed {
		require.Equal(t, false, m[payloads.KeyCallSent])
		pct, hasPct := m[payloads.KeyShedPercent].(int64)
		require.Equal(t, share > 0, hasPct, "shed_percent exactly when the share is known")
		if share > 0 {
			require.InDelta(t, share*100, float64(pct), 1, "shed_percent is the share")
			require.Equal(t, share < 0.5, pct < 50, "on the share's side of one half")
			require.Equal(t, share < 1, pct < 100)
			require.GreaterOrEqual(t, pct, int64(1))
		}
		stillSent := strings.Contains(reason, "most calls to it are still sent")
		require.Equal(t, share > 0 && share < 0.5, stillSent, "'most calls are still sent' only while under half is shed: %q", reason)
		require.Equal(t, share >= 0.5 && share < 1, strings.Contains(reason, "most calls to it are not sent now"), reason)
		require.Equal(t, share == 1, strings.Contains(reason, "every call to it is being held back"), reason)
		require.Equal(t, share > 0 && share < 1, strings.Contains(reason, fmt.Sprintf("about %d%% of calls", pct)), reason)
		require.Equal(t, share > 0 && share < 0.5 || share == 0, strings.HasPrefix(reason, "search is partly overloaded"), reason)
		require.NotContains(t, reason+instr, "succeed", "the throttle knows what it sends, not what succeeds")
		if mostHeld && !in.Firm && in.Cached == nil {
			require.Contains(t, instr, "Do not call this tool again in this turn")
		}
		if strings.Contains(instr, "most calls to it are still sent") {
			require.True(t, share > 0 && share < 0.5)
		}
	} else {
		require.NotContains(t, m, payloads.KeyShedPercent)
		require.NotContains(t, m, payloads.KeyCallSent)
	}

	// firm: the loop guard's answer, on every payload that can be repeated.
	canBeFirm := kind != payloads.TypeOutcomeUnknown && kind != payloads.TypeFailed
	if in.Firm && canBeFirm {
		require.Equal(t, true, m[payloads.KeyFirm])
		require.Contains(t, instr, "Stop calling it")
		require.Contains(t, instr, "3 times in this turn", "the count it quotes is the state's")
	} else {
		require.NotContains(t, m, payloads.KeyFirm)
		require.NotContains(t, instr, "Stop calling")
	}

	// A cached answer: offered with its age, and the instruction uses it.
	if in.Cached != nil {
		require.Equal(t, int64(300), m[payloads.KeyCachedAgeSeconds])
		require.Contains(t, reason, "A cached answer from 5 minutes ago is included.")
		if kind != payloads.TypeOutcomeUnknown && !(in.Firm && canBeFirm) {
			require.Contains(t, instr, "cached result")
		}
	} else {
		require.NotContains(t, m, payloads.KeyCachedResult)
		require.NotContains(t, reason+instr, "cached")
	}
	if kind == payloads.TypeOutcomeUnknown {
		require.Contains(t, instr, "Do not repeat this action")
	}
}
