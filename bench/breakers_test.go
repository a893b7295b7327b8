package bench

// The three breakers under test, built with the same gates, and the helpers that put
// them into a given state. The benchmarks themselves are in closed_test.go,
// open_test.go and halfopen_test.go.
//
// How each peer matches agentbreaker's policy (50% failure rate, at least 20 calls,
// 60s window in 10 buckets, 30s cooldown, 1 half-open probe):
//
//   - gobreaker v2: ReadyToTrip checks failures/requests ≥ 50% with requests ≥ 20;
//     Interval 60s with BucketPeriod 6s (v2.4's rolling window, 10 buckets); Timeout 30s;
//     MaxRequests 1 (one probe, and one success closes it). Its Requests count grows when
//     a call is admitted, not when it reports, so calls in flight dilute the rate; it has
//     no cooldown jitter.
//   - failsafe-go: WithFailureRateThreshold(0.5, 20, 60s), which is its time-based
//     thresholding (a sliding window of 10 slices); WithDelay(30s); WithSuccessThreshold(1)
//     so the half-open state admits one trial and closes on its success (without it the
//     half-open state would admit 20 trials, its execution threshold). No jitter.
//   - agentbreaker keeps its default 10% cooldown jitter. Jitter is drawn once, when a
//     breaker trips, so it is outside every measured path.

import (
	"errors"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/sony/gobreaker/v2"
)

// The shared gates.
const (
	failureRate    = 0.5
	minimumCalls   = 20
	window         = 60 * time.Second
	buckets        = 10
	cooldown       = 30 * time.Second
	halfOpenProbes = 1

	// longCooldown keeps a tripped breaker open for the whole of an open-state benchmark.
	longCooldown = time.Hour
)

// result is the value type the generic peers carry; an empty struct costs nothing.
type result = struct{}

var errFailed = errors.New("bench: dependency failed")

// succeed and fail are the guarded calls of the execute-style APIs. They are top-level
// functions so that passing them allocates no closure.
func succeed() (result, error) { return result{}, nil }
func fail() (result, error)    { return result{}, errFailed }

// agentbreakerPolicy is the shared gates with the given cooldown.
func agentbreakerPolicy(cool time.Duration) breaker.Policy {
	return breaker.Policy{
		FailureRateThreshold: failureRate,
		MinimumCalls:         minimumCalls,
		Window:               window,
		Buckets:              buckets,
		Cooldown:             cool,
		HalfOpenProbes:       halfOpenProbes,
	}
}

// countWindowPolicy is the shared gates over the last 100 calls instead of 60 seconds
// (resilience4j's COUNT_BASED window).
func countWindowPolicy(cool time.Duration) breaker.Policy {
	p := agentbreakerPolicy(cool)
	p.WindowCalls = 100
	return p
}

// newAgentbreaker returns our breaker with the shared gates and the given cooldown;
// clk nil means the default (coarse system) clock.
func newAgentbreaker(tb testing.TB, cool time.Duration, clk clock.Clock) *breaker.Breaker {
	tb.Helper()
	return newAgentbreakerPolicy(tb, agentbreakerPolicy(cool), clk)
}

func newAgentbreakerPolicy(tb testing.TB, p breaker.Policy, clk clock.Clock) *breaker.Breaker {
	tb.Helper()
	br, err := breaker.New(breaker.Config{Name: "dep", Policy: p, Clock: clk})
	if err != nil {
		tb.Fatal(err)
	}
	return br
}

// tripAgentbreaker reports MinimumCalls failures, which opens the breaker naturally.
func tripAgentbreaker(tb testing.TB, br *breaker.Breaker) {
	tb.Helper()
	for range minimumCalls {
		p, err := br.Allow()
		if err != nil {
			tb.Fatalf("agentbreaker rejected a call while tripping: %v", err)
		}
		p.Failure()
	}
	if s := br.State(); s != breaker.Open {
		tb.Fatalf("agentbreaker is %v after %d failures, want open", s, minimumCalls)
	}
}

// gobreakerSettings returns gobreaker settings as close to the shared gates as it
// allows, with the given open period.
func gobreakerSettings(timeout time.Duration) gobreaker.Settings {
	return gobreaker.Settings{
		Name:         "dep",
		MaxRequests:  halfOpenProbes,
		Interval:     window,
		BucketPeriod: window / buckets,
		Timeout:      timeout,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return c.Requests >= minimumCalls && float64(c.TotalFailures) >= failureRate*float64(c.Requests)
		},
	}
}

func newGobreaker(timeout time.Duration) *gobreaker.CircuitBreaker[result] {
	return gobreaker.NewCircuitBreaker[result](gobreakerSettings(timeout))
}

func newGobreakerTwoStep(timeout time.Duration) *gobreaker.TwoStepCircuitBreaker[result] {
	return gobreaker.NewTwoStepCircuitBreaker[result](gobreakerSettings(timeout))
}

// gobreakerState is what the two gobreaker flavours have in common for the helpers.
type gobreakerState interface{ State() gobreaker.State }

// tripGobreaker fails MinimumCalls calls through Execute.
func tripGobreaker(tb testing.TB, cb *gobreaker.CircuitBreaker[result]) {
	tb.Helper()
	for range minimumCalls {
		if _, err := cb.Execute(fail); err != errFailed {
			tb.Fatalf("gobreaker: Execute while tripping returned %v, want the call's error", err)
		}
	}
	mustGobreakerState(tb, cb, gobreaker.StateOpen)
}

// tripGobreakerTwoStep fails MinimumCalls calls through Allow.
func tripGobreakerTwoStep(tb testing.TB, cb *gobreaker.TwoStepCircuitBreaker[result]) {
	tb.Helper()
	for range minimumCalls {
		done, err := cb.Allow()
		if err != nil {
			tb.Fatalf("gobreaker rejected a call while tripping: %v", err)
		}
		done(errFailed)
	}
	mustGobreakerState(tb, cb, gobreaker.StateOpen)
}

func mustGobreakerState(tb testing.TB, cb gobreakerState, want gobreaker.State) {
	tb.Helper()
	if s := cb.State(); s != want {
		tb.Fatalf("gobreaker is %v, want %v", s, want)
	}
}

// newFailsafe returns a failsafe-go circuit breaker with the shared gates and the given
// delay (its open period).
func newFailsafe(delay time.Duration) circuitbreaker.CircuitBreaker[result] {
	return circuitbreaker.NewBuilder[result]().
		WithFailureRateThreshold(failureRate, minimumCalls, window).
		WithSuccessThreshold(halfOpenProbes).
		WithDelay(delay).
		Build()
}

// tripFailsafe records MinimumCalls failures through the permit API.
func tripFailsafe(tb testing.TB, cb circuitbreaker.CircuitBreaker[result]) {
	tb.Helper()
	for range minimumCalls {
		if !cb.TryAcquirePermit() {
			tb.Fatal("failsafe-go refused a permit while tripping")
		}
		cb.RecordFailure()
	}
	if s := cb.State(); s != circuitbreaker.OpenState {
		tb.Fatalf("failsafe-go is %v after %d failures, want open", s, minimumCalls)
	}
}

// waitFor polls cond every millisecond for up to five seconds. It is for setup only,
// where a peer without an injectable clock must see a short open period run out.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
