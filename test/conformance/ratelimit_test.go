package conformance_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
)

// Case 3: 429 with and without Retry-After.
//
// With Retry-After: 30 (README: a stated delay "holds against the model while the
// breaker is still closed: after a 429 with Retry-After: 30, the model's re-issue two
// seconds later is answered locally and never reaches the dependency"; calls are
// answered "with the agentbreaker.unavailable payload, the error_class of the answer
// that asked (http_429) and retry_after_seconds set to the time left. The breaker, the
// bulkhead and the retry budget are not asked"): re-issues at +2 s and +29 s are
// answered locally with 28 and 1 seconds left; the re-issue at +31 s is the
// operation's second attempt and reaches the server.
//
// Without Retry-After there is nothing to hold: the re-issue at +2 s is the second
// attempt and reaches the server.
//
// Either way a 429 is FAILED (a definitive refusal: nothing applied) and counts, so the
// mutation may be sent again under its key; each attempt is counted in the journal and
// the retry records.
func TestCase3RateLimited(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		retryAfter string
		// reissues are the delays, from the first call, of the model's re-issues.
		reissues []time.Duration
		// want is, per model call, the response_type and retry_after_seconds it got
		// ("" for the real result).
		want        []string
		wantSeconds []any
		wantCount   int // requests the server counted
		wantHeld    int // re-issues answered locally
		wantIntents []journal.State
		wantWindow  breaker.Counts
	}{
		{
			name: "with Retry-After", retryAfter: "30",
			reissues:    []time.Duration{2 * time.Second, 29 * time.Second, 31 * time.Second},
			want:        []string{payloads.TypeFailed, payloads.TypeUnavailable, payloads.TypeUnavailable, ""},
			wantSeconds: []any{30.0, 28.0, 1.0, nil},
			wantCount:   2, wantHeld: 2,
			wantIntents: []journal.State{journal.StateFailed, journal.StateSucceeded},
			wantWindow:  breaker.Counts{Calls: 2, Failures: 1},
		},
		{
			name:        "without Retry-After",
			reissues:    []time.Duration{2 * time.Second},
			want:        []string{payloads.TypeFailed, payloads.TypeFailed},
			wantSeconds: []any{nil, nil}, // no delay known: none stated
			wantCount:   2,
			wantIntents: []journal.State{journal.StateFailed, journal.StateFailed},
			wantWindow:  breaker.Counts{Calls: 2, Failures: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 1 || tt.retryAfter == "" {
					if tt.retryAfter != "" {
						w.Header().Set("Retry-After", tt.retryAfter)
					}
					w.WriteHeader(http.StatusTooManyRequests)
					_, _ = w.Write([]byte("slow down, quota exceeded for project 1234"))
					return
				}
				_, _ = w.Write([]byte(`{"status": "ok", "sent": true}`))
			})
			w := newWorld(t, setup{
				dependencies: map[string]dependencymap.Dependency{"mail": {Tools: []string{"send_email"}}},
				policy:       breaker.Policy{MinimumCalls: 4, Jitter: -1},
				mutating:     []string{"send_email"},
				tools: func(w *world) []tool.Tool {
					return []tool.Tool{w.httpTool(t, "send_email", http.MethodPost, srv.URL+"/send", clientOpts{})}
				},
			})
			args := map[string]any{"to": "ops@example.com", "subject": "report"}
			script := []func() breakertest.Step{call("send_email", args)}
			t0 := w.clk.Now()
			for _, d := range tt.reissues {
				script = append(script, func() breakertest.Step {
					w.clk.Set(t0.Add(d))
					return breakertest.Call("send_email", args)
				})
			}
			turn := w.turn(t, steps(script...))

			rs := responses(turn)
			require.Len(t, rs, len(tt.want))
			for i, want := range tt.want {
				if want == "" {
					require.Equal(t, map[string]any{"status": "ok", "sent": true}, rs[i], "call %d", i)
					continue
				}
				require.Equal(t, want, rs[i][payloads.KeyResponseType], "call %d", i)
				require.Equal(t, string(classify.ClassHTTP429), rs[i][payloads.KeyErrorClass], "call %d", i)
				require.Equal(t, tt.wantSeconds[i], rs[i][payloads.KeyRetryAfterSeconds], "call %d", i)
			}
			requireNoUpstreamText(t, w, turn, "quota exceeded")

			// Remote attempts: the held re-issues never reached the server.
			got := srv.requests("/send")
			require.Len(t, got, tt.wantCount)
			require.Equal(t, got[0].Key, got[len(got)-1].Key, "one operation, one key")

			// Breaker: closed throughout (the hold does not involve it); it measured
			// only the calls that were sent.
			b := w.breaker(t, "mail")
			require.Equal(t, breaker.Closed, b.State())
			require.Equal(t, tt.wantWindow, b.Snapshot().Window)
			require.Empty(t, w.fromTo("mail"))

			w.requireQueueEmpty(t)

			// Audit: one intent per attempt sent, one operation; the held re-issues are
			// short-circuit records with the class of the answer that asked.
			in := w.intents(t, "send_email")
			var states []journal.State
			for i, x := range in {
				states = append(states, x.State)
				require.Equal(t, i+1, x.Attempt)
				require.Equal(t, got[0].Key, x.IdempotencyKey)
				if x.State == journal.StateFailed {
					require.Equal(t, classify.ClassHTTP429, x.ErrorClass)
				}
			}
			require.Equal(t, tt.wantIntents, states)
			att := w.retryRecords(t, "send_email")
			require.Len(t, att, tt.wantCount)
			for i, a := range att {
				require.Equal(t, float64(i+1), a["attempt"])
				require.Equal(t, att[0]["request_id"], a["request_id"])
			}
			if tt.retryAfter != "" {
				require.Equal(t, float64(30000), att[0]["delay_ms"], "the server's delay is the retry's floor")
			}
			held := w.eventsOf(callbacks.EventShortCircuit)
			require.Len(t, held, tt.wantHeld)
			shorts := w.records(t, "short_circuit", "send_email")
			require.Len(t, shorts, tt.wantHeld)
			for i, e := range held {
				require.Equal(t, classify.ClassHTTP429, e.Class)
				require.Equal(t, breaker.Closed, e.BreakerState)
				require.Equal(t, "http_429", shorts[i]["error_class"])
				require.Equal(t, "closed", shorts[i]["breaker_state"])
			}
			require.Len(t, w.records(t, "call_outcome", "send_email"), tt.wantCount)

			requireNoUnsafeReplay(t, w, srv, map[string]string{"send_email": "/send"})
			w.requireClean(t)
		})
	}
}

// Case 3, the hold's reach: a stated delay holds every tool of the dependency, and is
// capped by the policy's MaxRetryAfter.
//
// Expected per the README ("holds every tool of that dependency until it has passed,
// even while the breaker is closed"; "A hold only moves later and is capped by the
// policy's MaxRetryAfter (default 15 min)"): after a 429 with Retry-After: 3600 from
// send_email, the model is told 900 s; a read of the same dependency two seconds later
// is answered locally with 898 s left and never reaches the server; once the 15
// minutes have passed it does.
func TestCase3StatedDelayHoldsTheDependencyCapped(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = w.Write([]byte(`{"status": "ok", "messages": 2}`))
	})
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"mail": {Tools: []string{"send_email", "list_inbox"}}},
		policy:       breaker.Policy{MinimumCalls: 4, Jitter: -1},
		mutating:     []string{"send_email"},
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{
				w.httpTool(t, "send_email", http.MethodPost, srv.URL+"/send", clientOpts{}),
				w.httpTool(t, "list_inbox", http.MethodGet, srv.URL+"/inbox", clientOpts{}),
			}
		},
	})
	maxRetryAfter := breaker.DefaultMaxRetryAfter
	t0 := w.clk.Now()
	turn := w.turn(t, steps(
		call("send_email", map[string]any{"to": "ops@example.com"}),
		func() breakertest.Step {
			w.clk.Set(t0.Add(2 * time.Second))
			return breakertest.Call("list_inbox", map[string]any{"folder": "in"})
		},
		func() breakertest.Step {
			w.clk.Set(t0.Add(maxRetryAfter + time.Second))
			return breakertest.Call("list_inbox", map[string]any{"folder": "in"})
		},
	))
	rs := responses(turn)
	require.Len(t, rs, 3)
	require.Equal(t, payloads.TypeFailed, rs[0][payloads.KeyResponseType])
	// rs[0]'s retry_after_seconds: see TestCase3FailedAnswerStatesTheCappedDelay.
	require.Equal(t, payloads.TypeUnavailable, rs[1][payloads.KeyResponseType], "another tool of the same dependency is held")
	require.Equal(t, string(classify.ClassHTTP429), rs[1][payloads.KeyErrorClass])
	require.Equal(t, (maxRetryAfter - 2*time.Second).Seconds(), rs[1][payloads.KeyRetryAfterSeconds])
	require.Equal(t, map[string]any{"status": "ok", "messages": 2.0}, rs[2], "the hold has passed")

	require.Equal(t, 1, srv.count("/send"))
	require.Equal(t, 1, srv.count("/inbox"), "the held read never reached the server")
	b := w.breaker(t, "mail")
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, breaker.Counts{Calls: 1}, b.Snapshot().Window, "the 429 has left the 60 s window")
	w.requireQueueEmpty(t)
	shorts := w.records(t, "short_circuit", "list_inbox")
	require.Len(t, shorts, 1)
	require.Equal(t, "http_429", shorts[0]["error_class"])
	require.Len(t, w.intents(t, "send_email"), 1)
	require.Len(t, w.intents(t, "list_inbox"), 1)
	requireNoUnsafeReplay(t, w, srv, map[string]string{"send_email": "/send"})
	w.requireClean(t)
}

// TestCase3FailedAnswerStatesTheCappedDelay: the answer to the call that got the 429
// must state the delay agentbreaker enforces, not the uncapped one.
//
// Expected per breaker.Policy.MaxRetryAfter ("MaxRetryAfter caps a delay stated by the
// dependency (Retry-After, RetryInfo)") and the README ("A hold only moves later and is
// capped by the policy's MaxRetryAfter (default 15 min)"; held calls get
// "retry_after_seconds set to the time left"): after Retry-After: 3600 the dependency
// may be tried again after 900 s, and the hold lets calls through then (see
// TestCase3StatedDelayHoldsTheDependencyCapped), so the model should be told 900, the
// same figure the held call two seconds later states as 898.
func TestCase3FailedAnswerStatesTheCappedDelay(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	w := newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"mail": {Tools: []string{"send_email"}}},
		policy:       breaker.Policy{MinimumCalls: 4, Jitter: -1},
		mutating:     []string{"send_email"},
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{w.httpTool(t, "send_email", http.MethodPost, srv.URL+"/send", clientOpts{})}
		},
	})
	rs := responses(w.turn(t, callOnce("send_email", map[string]any{"to": "ops@example.com"})))
	require.Len(t, rs, 1)
	require.Equal(t, payloads.TypeFailed, rs[0][payloads.KeyResponseType])
	require.Equal(t, 1, srv.count("/send"))
	require.Equal(t, breaker.Closed, w.breaker(t, "mail").State())
	w.requireQueueEmpty(t)
	require.Len(t, w.intents(t, "send_email"), 1)
	requireNoUnsafeReplay(t, w, srv, map[string]string{"send_email": "/send"})
	w.requireClean(t)
	require.Equal(t, breaker.DefaultMaxRetryAfter.Seconds(), rs[0][payloads.KeyRetryAfterSeconds],
		"finding: the failed answer states the uncapped Retry-After (3600 s) while agentbreaker's hold ends after MaxRetryAfter (900 s)")
}

// Case 3, the stated delay as the cooldown's floor.
//
// Expected per "How the breaker decides" ("a 429 "retry in 40 s" while closed, then a
// trip on a plain 503 five seconds later, stays open 35 s more, not 30"): two calls of
// one model response reach the API; one is answered 429 with Retry-After: 40 at T, the
// other 503 at T+5 s, which trips the breaker (volume gate 2). The breaker reopens at
// T+40 s, not T+35 s: a call at T+39 s is answered locally, the one at T+40 s is the
// probe.
func TestCase3StatedDelayFloorsTheCooldown(t *testing.T) {
	t.Parallel()
	var w *world
	srv := newServer(t, func(n int, rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a":
			rw.Header().Set("Retry-After", "40")
			rw.WriteHeader(http.StatusTooManyRequests)
			return
		case "/b":
			if n <= 2 {
				// Answer once the 429 has been recorded, five seconds later.
				deadline := time.Now().Add(20 * time.Second) // real I/O bound
				for !outcomeSeen(w, "get_a") && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				w.clk.Advance(5 * time.Second)
				rw.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = rw.Write([]byte(`{"status": "ok"}`))
	})
	w = newWorld(t, setup{
		dependencies: map[string]dependencymap.Dependency{"api": {Tools: []string{"get_a", "get_b"},
			Policy: breaker.Policy{MinimumCalls: 2, Cooldown: 30 * time.Second, Jitter: -1}}},
		tools: func(w *world) []tool.Tool {
			return []tool.Tool{
				w.httpTool(t, "get_a", http.MethodGet, srv.URL+"/a", clientOpts{}),
				w.httpTool(t, "get_b", http.MethodGet, srv.URL+"/b", clientOpts{}),
			}
		},
	})
	t0 := w.clk.Now()
	turn := w.turn(t, steps(func() breakertest.Step {
		return breakertest.Calls(
			&genai.FunctionCall{Name: "get_a", Args: map[string]any{"k": 1}},
			&genai.FunctionCall{Name: "get_b", Args: map[string]any{"k": 2}},
		)
	}))
	rs := responses(turn)
	require.Len(t, rs, 2)
	require.Equal(t, 2, srv.count(""))
	b := w.breaker(t, "api")
	require.Equal(t, breaker.Open, b.State())
	ev := w.transitions.list()
	require.Len(t, ev, 1)
	require.Equal(t, t0.Add(5*time.Second), ev[0].At)
	require.Equal(t, t0.Add(40*time.Second), ev[0].ReopenAt, "the stated delay floors the cooldown: 35 s more, not 30")

	w.clk.Set(t0.Add(39 * time.Second))
	r := responses(w.turn(t, callOnce("get_b", map[string]any{"k": 3})))[0]
	require.Equal(t, payloads.TypeUnavailable, r[payloads.KeyResponseType])
	require.Equal(t, 1.0, r[payloads.KeyRetryAfterSeconds])
	require.Equal(t, 2, srv.count(""), "no early probe")

	w.clk.Set(t0.Add(40 * time.Second))
	r = responses(w.turn(t, callOnce("get_b", map[string]any{"k": 3})))[0]
	require.Equal(t, map[string]any{"status": "ok"}, r)
	require.Equal(t, 3, srv.count(""))
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, []string{
		"closed>open:failure_rate", "open>half_open:cooldown_elapsed", "half_open>closed:probe_succeeded",
	}, w.fromTo("api"))
	w.requireQueueEmpty(t)
	require.Len(t, w.intents(t, "get_a"), 1)
	require.Len(t, w.intents(t, "get_b"), 2)
	requireNoUnsafeReplay(t, w, srv, nil)
	w.requireClean(t)
}

// outcomeSeen reports whether the plugin has recorded the outcome of a call of tool.
func outcomeSeen(w *world, tool string) bool {
	return slices.ContainsFunc(w.events.list(), func(e callbacks.Event) bool {
		return e.Kind == callbacks.EventCallOutcome && e.Tool == tool
	})
}

// Case 3, attempts bounded by count and deadline: the model keeps re-issuing a call
// that gets 429 without a stated delay.
//
// Expected per the retry docs ("at most Policy.MaxAttempts attempts and
// Policy.Deadline of time, whichever runs out first"; defaults 3 and 90 s; the model's
// re-issue "is the operation's next attempt, subject to MaxAttempts, the deadline, the
// retry budget") and the callbacks docs ("spent attempts, deadline or retry budget give
// the budget-exhausted payload"; "Every attempt, and every attempt refused before it
// was sent, produces an Event"): re-issues 11 s apart (the retry budget's floor allows
// one retry per 10 s window) reach the server as attempts 2 and 3, and the fourth call
// is refused without reaching it; a re-issue after the 90 s deadline is refused too.
func TestCase3AttemptsAreBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reissues  []time.Duration
		wantTypes []string
		wantCount int
		wantStop  retry.Reason
	}{
		{name: "by count", reissues: []time.Duration{11 * time.Second, 22 * time.Second, 33 * time.Second},
			wantTypes: []string{payloads.TypeFailed, payloads.TypeFailed, payloads.TypeFailed, payloads.TypeBudgetExhausted},
			wantCount: 3, wantStop: retry.ReasonAttemptsExhausted},
		{name: "by deadline", reissues: []time.Duration{91 * time.Second},
			wantTypes: []string{payloads.TypeFailed, payloads.TypeBudgetExhausted},
			wantCount: 1, wantStop: retry.ReasonDeadlineExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusTooManyRequests)
			})
			w := newWorld(t, setup{
				dependencies: map[string]dependencymap.Dependency{"quotes": {Tools: []string{"get_quote"}}},
				policy:       breaker.Policy{MinimumCalls: 10, Jitter: -1},
				tools: func(w *world) []tool.Tool {
					return []tool.Tool{w.httpTool(t, "get_quote", http.MethodGet, srv.URL+"/quote", clientOpts{})}
				},
			})
			args := map[string]any{"symbol": "ACME"}
			t0 := w.clk.Now()
			script := []func() breakertest.Step{call("get_quote", args)}
			for _, d := range tt.reissues {
				script = append(script, func() breakertest.Step {
					w.clk.Set(t0.Add(d))
					return breakertest.Call("get_quote", args)
				})
			}
			rs := responses(w.turn(t, steps(script...)))
			var types []string
			for _, r := range rs {
				types = append(types, r[payloads.KeyResponseType].(string))
			}
			require.Equal(t, tt.wantTypes, types)
			require.Equal(t, tt.wantCount, srv.count("/quote"))
			require.Equal(t, breaker.Closed, w.breaker(t, "quotes").State())
			w.requireQueueEmpty(t)

			in := w.intents(t, "get_quote")
			require.Len(t, in, tt.wantCount)
			for i, x := range in {
				require.Equal(t, i+1, x.Attempt)
				require.Equal(t, in[0].RequestID, x.RequestID)
			}
			refused := w.eventsOf(callbacks.EventRetryRefused)
			require.Len(t, refused, 1)
			require.Equal(t, tt.wantStop, refused[0].RetryReason)
			require.Equal(t, breaker.Closed, refused[0].BreakerState)
			requireNoUnsafeReplay(t, w, srv, nil)

			// The refused attempt's own record (retry docs: "Every attempt, and every
			// attempt refused before it was sent, produces an Event"; README: "The
			// plugin's retry attempt records carry the state of the breaker that admitted
			// the call").
			ev := w.attempts.list()
			require.Len(t, ev, tt.wantCount+1, "finding: no attempt event for the refused attempt %d (%s)", tt.wantCount+1, tt.wantStop)
			last := ev[len(ev)-1]
			require.Equal(t, tt.wantCount+1, last.Attempt)
			require.Equal(t, classify.FailedBeforeSend, last.Outcome)
			require.False(t, last.Dispatched)
			require.Equal(t, tt.wantStop, last.Stop)
			require.Equal(t, "closed", last.BreakerState, "finding: the refused attempt's record has no breaker_state, though the plugin's breaker admitted the call")
			require.Len(t, w.retryRecords(t, "get_quote"), tt.wantCount+1)
			w.requireClean(t)
		})
	}
}
