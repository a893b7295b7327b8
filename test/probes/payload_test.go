package probes_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/throttle"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
)

const (
	stillSent  = "most calls to it are still sent"
	notSentNow = "most calls to it are not sent now"
)

// checkShedWords checks docs/partial-outages.md, "What the model is told": "Its words
// follow that share. Under half, the reason says so (... about 30% of calls to it are
// being held back; most calls to it are still sent), retry_advised is true ... From
// half up, the reason says that most calls to it are not sent now, retry_advised is
// false".
func checkShedWords(t *testing.T, p map[string]any) {
	t.Helper()
	pct, ok := number(p[payloads.KeyShedPercent])
	if !ok {
		t.Errorf("shed payload without a numeric shed_percent: %v", p)
		return
	}
	reason, _ := p[payloads.KeyReason].(string)
	advised, _ := p[payloads.KeyRetryAdvised].(bool)
	firm, _ := p[payloads.KeyFirm].(bool)
	if pct < 50 {
		if !strings.Contains(reason, stillSent) || strings.Contains(reason, notSentNow) {
			t.Errorf("shed_percent %d: reason %q, want %q", pct, reason, stillSent)
		}
		if advised != !firm {
			t.Errorf("shed_percent %d (firm %v): retry_advised = %v", pct, firm, advised)
		}
	} else {
		if !strings.Contains(reason, notSentNow) && !strings.Contains(reason, "every call to it is being held back") {
			t.Errorf("shed_percent %d: reason %q, want %q", pct, reason, notSentNow)
		}
		if strings.Contains(reason, stillSent) {
			t.Errorf("shed_percent %d: reason %q still says %q", pct, reason, stillSent)
		}
		if advised {
			t.Errorf("shed_percent %d: retry_advised true from half up", pct)
		}
	}
	checkRetryAfter(t, p)
}

// checkRetryAfter checks docs/failures.md: "retry_after_seconds appears only when a
// delay is known", and payloads.Info.RetryAfter's godoc: zero means nobody knows, "the
// payload then has no retry_after_seconds at all, rather than a 0 that would read as
// now": a 0 is never shown, least of all beside retry_advised false.
func checkRetryAfter(t *testing.T, p map[string]any) {
	t.Helper()
	v, ok := p[payloads.KeyRetryAfterSeconds]
	if !ok {
		return
	}
	secs, isNum := number(v)
	if !isNum {
		t.Errorf("retry_after_seconds is %T %v", v, v)
		return
	}
	if secs < 1 {
		t.Errorf("retry_after_seconds = %v beside retry_advised %v in %v: a 0 reads as now", secs, p[payloads.KeyRetryAdvised], p)
	}
}

// payloads godoc, Shed: "Its words follow Info.Shed, the share held back: under half,
// most calls are still sent and a later try is advised (retry_advised: true); from half
// up, most calls are held back ... and no retry is advised; a share not known claims
// neither. The loop guard's firm answer never advises a retry." docs/partial-outages.md:
// shed_percent is "the share of the dependency's calls the throttle is holding back".
func TestShedPayloadWordsFollowTheShare(t *testing.T) {
	for _, share := range []float64{0.01, 0.1, 0.3, 0.45, 0.49, 0.5, 0.51, 0.75, 0.9, 1} {
		for _, firm := range []bool{false, true} {
			p := payloads.Shed(payloads.Info{Dependency: "search", Tool: "web_search", Shed: share, Firm: firm})
			if p[payloads.KeyResponseType] != payloads.TypeShed || p[payloads.KeyCallSent] != false || p[payloads.KeyStatus] != "overloaded" {
				t.Fatalf("share %v: payload %v lacks response_type/call_sent/status", share, p)
			}
			pct, _ := number(p[payloads.KeyShedPercent])
			if math.Abs(float64(pct)-share*100) > 1 {
				t.Errorf("share %v: shed_percent = %v, want about %v", share, p[payloads.KeyShedPercent], share*100)
			}
			if (share < 0.5) != (pct < 50) {
				t.Errorf("share %v: shed_percent %d is on the other side of half from the share", share, pct)
			}
			checkShedWords(t, p)
			if firm && p[payloads.KeyRetryAdvised] != false {
				t.Errorf("share %v: the firm answer advises a retry", share)
			}
		}
	}
	// A share not known claims neither.
	p := payloads.Shed(payloads.Info{Dependency: "search"})
	if _, ok := p[payloads.KeyShedPercent]; ok {
		t.Errorf("unknown share: shed_percent %v present", p[payloads.KeyShedPercent])
	}
	if r, _ := p[payloads.KeyReason].(string); strings.Contains(r, stillSent) || strings.Contains(r, notSentNow) {
		t.Errorf("unknown share: the reason claims a share: %q", r)
	}
}

// payloads.Info.RetryAfter: "it becomes retry_after_seconds, rounded up. Zero or
// negative means nobody knows when ... no retry_after_seconds at all ... An
// OutcomeUnknown payload never has one."
func TestRetryAfterSecondsIsNeverZero(t *testing.T) {
	builders := map[string]func(payloads.Info) map[string]any{
		"unavailable": payloads.Unavailable, "failed": payloads.Failed, "busy": payloads.Busy,
		"budget_exhausted": payloads.BudgetExhausted, "shed": payloads.Shed, "outcome_unknown": payloads.OutcomeUnknown,
	}
	cases := []struct {
		after time.Duration
		want  int64 // 0: absent
	}{{-time.Second, 0}, {0, 0}, {time.Nanosecond, 1}, {400 * time.Millisecond, 1}, {time.Second, 1}, {1200 * time.Millisecond, 2}, {90 * time.Second, 90}}
	for name, build := range builders {
		for _, firm := range []bool{false, true} {
			for _, c := range cases {
				p := build(payloads.Info{Dependency: "crm", Tool: "crm_lookup", RetryAfter: c.after, Firm: firm, Shed: 0.7})
				checkRetryAfter(t, p)
				v, ok := p[payloads.KeyRetryAfterSeconds]
				want := c.want
				if name == "outcome_unknown" {
					want = 0
				}
				switch {
				case want == 0 && ok:
					t.Errorf("%s(RetryAfter %v, firm %v): retry_after_seconds = %v, want none", name, c.after, firm, v)
				case want != 0 && !ok:
					t.Errorf("%s(RetryAfter %v, firm %v): no retry_after_seconds, want %d", name, c.after, firm, want)
				case want != 0:
					if got, _ := number(v); int64(got) != want {
						t.Errorf("%s(RetryAfter %v): retry_after_seconds = %v (%T), want %d", name, c.after, v, v, want)
					}
				}
			}
		}
	}
}

// The same promises for the payloads a model really receives, through adk-go's runner:
// a throttled dependency that answers 503 with a stated Retry-After (0 s in one run,
// 2 s in the other), its throttle's window fed through the throttle's public Report so
// that the share sits near 30% for 40 turns, then near 70% for 40 more.
// docs/partial-outages.md: shed_percent is the share "the throttle is holding back when
// the call is shed"; "A delay the dependency stated is passed on (retry_after_seconds)".
func TestShedPayloadsThroughTheRunner(t *testing.T) {
	for _, stated := range []int{0, 2} {
		t.Run(map[int]string{0: "retry-after-0", 2: "retry-after-2"}[stated], func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewFake(time.Time{})
			srv := breakertest.NewServer(t)
			srv.Set(breakertest.RetryAfter(503, stated))
			deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Dependencies: map[string]dependencymap.Dependency{
				"search": {
					Tools:    []string{"web_search"},
					Policy:   breaker.Policy{MinimumCalls: 1000, Window: time.Hour},
					Throttle: &throttle.Config{K: 1, MinRequests: 5, Window: time.Hour},
				},
			}})
			th, ok := deps.Throttle("search")
			if !ok {
				t.Fatal("no throttle")
			}
			// p = (requests - K*accepts) / (requests + 1): 1000 requests, 700 accepted.
			for i := 0; i < 1000; i++ {
				th.Report(i < 700)
			}
			guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk})
			search, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "web_search", URL: srv.URL, TypedErrors: true})
			if err != nil {
				t.Fatal(err)
			}
			m := breakertest.MustNewModel(breakertest.ModelConfig{Repeat: true, DiscardRequests: true, Steps: []breakertest.Step{
				breakertest.Call("web_search", map[string]any{"query": "weather"}),
				breakertest.Text("done"),
			}})
			ag, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{search}})
			if err != nil {
				t.Fatal(err)
			}
			h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: ag, Plugins: []*plugin.Plugin{guard.Plugin()}})
			shed, below, above := 0, 0, 0
			for i := 0; i < 80; i++ {
				if i == 40 { // push the share to about 70%
					for j := 0; j < 1400; j++ {
						th.Report(false)
					}
				}
				before := th.Probability()
				sid, err := h.NewSession(ctx)
				if err != nil {
					t.Fatal(err)
				}
				turn, err := h.Run(ctx, sid, "weather?")
				if err != nil {
					t.Fatal(err)
				}
				after := th.Probability()
				for _, fr := range turn.FunctionResponses() {
					p := fr.Response
					checkRetryAfter(t, p)
					if ra, ok := number(p[payloads.KeyRetryAfterSeconds]); ok && (stated == 0 || ra > stated) {
						t.Errorf("turn %d: retry_after_seconds %d, the dependency stated %d s: %v", i, ra, stated, p)
					}
					if p[payloads.KeyResponseType] != payloads.TypeShed {
						continue
					}
					shed++
					checkShedWords(t, p)
					pct, _ := number(p[payloads.KeyShedPercent])
					lo, hi := math.Min(before, after)*100-1, math.Max(before, after)*100+1
					if float64(pct) < lo || float64(pct) > hi {
						t.Errorf("turn %d: shed_percent %d, but the throttle's share was %.3f before and %.3f after the call", i, pct, before, after)
					}
					if pct < 50 {
						below++
					} else {
						above++
					}
				}
				clk.Advance(3 * time.Second) // past any stated hold
			}
			if below == 0 || above == 0 {
				t.Fatalf("%d calls shed (%d under half, %d from half up): the scenario must shed on both sides of half", shed, below, above)
			}
			t.Logf("%d shed, %d under half, %d from half up; %d requests reached the dependency", shed, below, above, srv.Requests())
		})
	}
}

// number reads a JSON-like number of any Go type a payload may hold (an int when built,
// a float64 once it went through adk-go's function response).
func number(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	case float32:
		return int(n), true
	}
	return 0, false
}
