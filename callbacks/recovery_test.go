package callbacks_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/loopguard"
)

// httpLookup is the "lookup" tool of the crm dependency, calling srv.
func httpLookup(t *testing.T, srv *breakertest.Server) tool.Tool {
	t.Helper()
	lt, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "lookup", URL: srv.URL})
	require.NoError(t, err)
	return lt
}

// TestAHiddenToolCalledOnceACooldownIsOverIsTheProbe (issue 18a): the loop guard hid
// the tool while the cooldown ran, the model took its time and called it anyway after
// the cooldown ended. The call must ask the breaker and become the probe; it used to
// be answered "unavailable" by the unknown-tool path, with no probe ever sent.
func TestAHiddenToolCalledOnceACooldownIsOverIsTheProbe(t *testing.T) {
	t.Parallel()
	srv := breakertest.NewServer(t)
	var f *callbackstest.Fixture
	f = callbackstest.New(t, callbackstest.Config{
		Tools:     []tool.Tool{httpLookup(t, srv)},
		Deps:      map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}},
		Callbacks: callbacks.Config{Guidance: callbacks.Guidance{LoopGuard: loopguard.Config{HideOpenTools: true}}},
		Then: func(r breakertest.Request) breakertest.Step {
			if len(r.FunctionResponses()) > 0 {
				return breakertest.Text("done")
			}
			f.Clock.Advance(10 * time.Second) // the model answers slowly; the cooldown ends meanwhile
			return breakertest.Call("lookup", map[string]any{"query": "42"})
		},
	})
	b := f.Breaker(t, "crm")
	callbackstest.Trip(t, b)
	f.Clock.Advance(25 * time.Second) // 5 s of the 30 s cooldown left when the model is asked

	turn := f.Run(t, "look up 42")
	_, offered := f.Model.Requests()[0].Declaration("lookup")
	require.False(t, offered, "hidden while the cooldown ran")
	require.Equal(t, int64(1), srv.Requests(), "the call went to the dependency as the probe")
	require.Equal(t, "ok", turn.FunctionResponses()[0].Response["status"])
	require.Equal(t, breaker.Closed, b.State())
	f.RequireClean(t)
}

// TestLoopGuardOnASingleCallerRecoversWithinOneCooldown (issue 18a, done-means): a
// long simulated run on a fake clock. The loop guard hides open tools; one caller
// runs a turn every 30 s for 40 minutes; the model calls the lookup tool only when it
// is offered. The dependency fails (503) until it recovers. The breaker must close
// within one cooldown of the recovery, with nobody else calling and no operator.
// Cooldowns grow 30 s, 1 m, 2 m, then 4 m at most; every turn and cooldown falls on
// a 30 s boundary, so the figures are exact.
func TestLoopGuardOnASingleCallerRecoversWithinOneCooldown(t *testing.T) {
	t.Parallel()
	const (
		every       = 30 * time.Second
		run         = 40 * time.Minute
		maxCooldown = 4 * time.Minute
	)
	for _, recoverAt := range []time.Duration{6*time.Minute + 30*time.Second, 17*time.Minute + 30*time.Second, 24 * time.Minute} {
		t.Run(fmt.Sprint(recoverAt), func(t *testing.T) {
			t.Parallel()
			srv := breakertest.NewServer(t)
			srv.Set(breakertest.Status(503))
			f := callbackstest.New(t, callbackstest.Config{
				Tools: []tool.Tool{httpLookup(t, srv)},
				Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"},
					Policy: breaker.Policy{Window: 5 * time.Minute, CooldownMultiplier: 2, MaxCooldown: maxCooldown}}},
				Callbacks: callbacks.Config{Guidance: callbacks.Guidance{LoopGuard: loopguard.Config{HideOpenTools: true}}},
				Then: func(r breakertest.Request) breakertest.Step {
					if len(r.FunctionResponses()) > 0 {
						return breakertest.Text("done")
					}
					if _, ok := r.Declaration("lookup"); ok {
						return breakertest.Call("lookup", map[string]any{"query": "42"})
					}
					return breakertest.Text("the CRM is unavailable")
				},
			})
			b := f.Breaker(t, "crm")
			start := f.Clock.Now()
			var (
				opened, recovered bool
				waitAtRecovery    time.Duration
				closedAfter       = time.Duration(-1)
				offered, hidden   int
			)
			for at := time.Duration(0); at <= run; at += every {
				f.Clock.Set(start.Add(at))
				if at == recoverAt {
					srv.Set(breakertest.OK("ok"))
					recovered = true
					require.True(t, opened, "the breaker opened during the outage")
					require.Equal(t, breaker.Open, b.State())
					waitAtRecovery = b.RetryAfter()
				}
				before, first := srv.Requests(), f.Model.Calls()
				f.Run(t, "look up 42")
				if _, ok := f.Model.Requests()[first].Declaration("lookup"); ok {
					offered++
					require.Equal(t, before+1, srv.Requests(), "at %s: an offered tool is called once", at)
				} else {
					hidden++
					require.Equal(t, before, srv.Requests(), "at %s: a hidden tool is not called", at)
				}
				switch s := b.State(); {
				case s == breaker.Open:
					opened = true
					require.Positive(t, b.RetryAfter(), "at %s: open after a turn means a fresh cooldown", at)
				case s == breaker.Closed && recovered && closedAfter < 0:
					closedAfter = at - recoverAt
				}
				if closedAfter >= 0 {
					require.Equal(t, breaker.Closed, b.State(), "at %s: stays closed once recovered", at)
				}
			}
			require.GreaterOrEqual(t, closedAfter, time.Duration(0), "the breaker closed without an operator")
			require.LessOrEqual(t, closedAfter, waitAtRecovery, "closed when the cooldown running at recovery ended")
			require.LessOrEqual(t, closedAfter, maxCooldown, "within one cooldown of the recovery")
			require.Positive(t, hidden)
			t.Logf("recovered at %s: closed %s later (cooldown left then %s); %d turns offered the tool, %d hid it; %d requests",
				recoverAt, closedAfter, waitAtRecovery, offered, hidden, srv.Requests())
			f.RequireClean(t)
		})
	}
}
