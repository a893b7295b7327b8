package models

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// docs/model-failover.md: "a transport error of an openai-go request goes back as a
// local answer it does not retry, and the attempt is judged on the real error". The
// server reads the request and closes the connection; the primary opens on its first
// failure, and the announced cause must be the connection's class, not an HTTP status.
func TestCutConnectionJudgedOnRealError(t *testing.T) {
	for _, p := range allPaths {
		for _, kind := range []primaryKind{oaiDefault, oaiRoute} {
			t.Run(fmt.Sprintf("%s/%s", p, kind), func(t *testing.T) {
				w := newWorld(t, true)
				srv, fb := newOpenAIServer(t), newGeminiServer(t)
				srv.set(answer{Drop: true})
				fb.set(answer{Text: fallbackText})
				h, _, _ := setup(t, w, p, kind, srv, fb)
				tr := turn(t, h)
				if got := tr.FinalText(); got != fallbackText {
					t.Fatalf("final text %q (error %q), want the fallback's", got, turnError(tr))
				}
				if got := srv.count(); got != 1 {
					t.Errorf("primary received %d requests, want 1", got)
				}
				ev := w.announced()
				if len(ev) != 1 {
					t.Fatalf("announced %+v, want one failover", ev)
				}
				switch ev[0].Cause {
				case "connection_reset", "transport":
				default:
					t.Errorf("cause %q, want the cut connection's class (connection_reset or transport), not a local answer's status", ev[0].Cause)
				}
			})
		}
	}
}

// docs/model-failover.md: "An attempt timeout that cuts an SDK sleeping on a stated delay
// keeps the delay the transport saw", and "a stated delay ... floors the route's reopen"
// (capped only by breaker.Policy.MaxRetryAfter, default 15 min). The model is our own
// over net/http with NewTransport; on a 429 it either fails at once or, like an SDK that
// sleeps the delay verbatim, waits it out on the call's context until AttemptTimeout
// (10 s, on a TimerClock) cuts it. The primary opens on its first failure with a 30 s
// cooldown, so a kept delay shows as a reopen well past 30 s.
func TestAttemptTimeoutKeepsStatedDelay(t *testing.T) {
	for _, sleeps := range []bool{false, true} {
		for _, delay := range []int{60, 100, 600} {
			t.Run(fmt.Sprintf("sleeps=%v/Retry-After=%d", sleeps, delay), func(t *testing.T) {
				w := newWorld(t, true)
				tc := &timerClock{Fake: w.clk}
				srv, fb := newGeminiServer(t), newGeminiServer(t)
				srv.set(answer{Status: 429, Header: map[string]string{"Retry-After": fmt.Sprint(delay)}})
				fb.set(answer{Text: fallbackText})
				own := &httpModel{name: gptModel, url: srv.URL, client: &http.Client{Transport: modelfailover.NewTransport(nil)}, sleepOnDelay: sleeps, sleeping: make(chan struct{}, 1)}
				f := modelfailover.MustNew(modelfailover.Config{
					Breakers: w.deps, Clock: tc, AttemptTimeout: 10 * time.Second,
					Routes: []modelfailover.Route{{Model: gptModel, Region: region, LLM: own},
						{Model: flashModel, Region: region, LLM: geminiModel(t, fb, flashModel, modelfailover.NewTransport(nil), false)}},
				})
				h := harness(t, asModel(f))
				result := make(chan *breakertest.Turn, 1)
				go func() { result <- turn(t, h) }()
				elapsed := time.Duration(0)
				if sleeps {
					// Wait until the model has the 429 in hand (so the transport saw it)
					// and sleeps on it.
					select {
					case <-own.sleeping:
					case <-time.After(turnWall):
						t.Fatal("the model never started waiting out the delay")
					}
					if tc.pending() == 0 {
						t.Fatal("no time bound armed on the TimerClock")
					}
					tc.advance(11 * time.Second)
					elapsed = 11 * time.Second
				}
				var tr *breakertest.Turn
				select {
				case tr = <-result:
				case <-time.After(turnWall):
					t.Fatal("AttemptTimeout did not cut the model sleeping on the stated delay")
				}
				if got := tr.FinalText(); got != fallbackText {
					t.Errorf("final text %q (error %q), want the fallback's", got, turnError(tr))
				}
				br := w.breaker(t, gptModel)
				if st := br.State(); st != breaker.Open {
					t.Fatalf("primary breaker %v, want open", st)
				}
				// Whichever instant the floor counts from (the answer at +0, or the
				// breaker opening), the reopen is at least delay - elapsed - 1 s away.
				want := time.Duration(delay)*time.Second - elapsed - time.Second
				if ra := br.RetryAfter(); ra < want {
					t.Errorf("primary reopens in %v, want the stated %d s kept (at least %v from now), not the 30 s cooldown", ra, delay, want)
				}
			})
		}
	}
}
