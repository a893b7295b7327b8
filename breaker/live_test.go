package breaker_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
)

func liveBreaker(t *testing.T, p breaker.Policy) (*breaker.Breaker, *clock.Fake, *[]breaker.Event) {
	t.Helper()
	fc := clock.NewFake(time.Unix(1000, 0))
	var events []breaker.Event
	p.Jitter = -1
	b := breaker.MustNew(breaker.Config{Name: "crm", Policy: p, Clock: fc,
		OnStateChange: []func(breaker.Event){func(e breaker.Event) { events = append(events, e) }}})
	return b, fc, &events
}

func report(b *breaker.Breaker, n int, v breaker.Verdict) {
	for range n {
		p, err := b.Allow()
		if err == nil {
			p.Report(breaker.Report{Verdict: v})
		}
	}
}

func TestSetPolicyKeepsAnOpenBreakerOpenWithItsCounts(t *testing.T) {
	b, fc, events := liveBreaker(t, breaker.Policy{MinimumCalls: 4, Cooldown: time.Minute, Version: "v1"})
	report(b, 4, breaker.Failure)
	before := b.Snapshot()
	if before.State != breaker.Open {
		t.Fatalf("state %s, want open", before.State)
	}
	if err := b.SetPolicy(breaker.Policy{MinimumCalls: 10, Cooldown: 10 * time.Second, Jitter: -1, Version: "v2"}); err != nil {
		t.Fatal(err)
	}
	after := b.Snapshot()
	if after.State != breaker.Open || after.Generation != before.Generation || after.Window != before.Window ||
		after.RetryAfter != before.RetryAfter {
		t.Errorf("after the change %+v, want the state, generation, window and open period of %+v", after, before)
	}
	if after.PolicyVersion != "v2" || b.Policy().MinimumCalls != 10 {
		t.Errorf("version %q, minimum calls %d: want v2 and 10", after.PolicyVersion, b.Policy().MinimumCalls)
	}
	fc.Advance(time.Minute)
	report(b, 1, breaker.Failure) // the probe fails: reopens for the new cooldown
	last := (*events)[len(*events)-1]
	if last.PolicyVersion != "v2" || last.To != breaker.Open || last.ReopenAt.Sub(last.At) != 10*time.Second {
		t.Errorf("event after the change %+v: want version v2 and the new 10s cooldown", last)
	}
}

func TestSetPolicyRegridsTheWindow(t *testing.T) {
	tests := []struct {
		name      string
		window    time.Duration
		buckets   int
		wantCalls int64
	}{
		{"shorter drops the oldest buckets", 20 * time.Second, 2, 2},
		{"longer keeps every call", 2 * time.Minute, 4, 4},
		{"finer keeps every call", time.Minute, 60, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, fc, _ := liveBreaker(t, breaker.Policy{Window: time.Minute, Buckets: 6})
			for range 4 { // one failure every 15s: at 0s, 15s, 30s, 45s
				report(b, 1, breaker.Failure)
				fc.Advance(15 * time.Second)
			}
			fc.Advance(-14 * time.Second) // now 46s: the calls are 46, 31, 16 and 1 s old
			if err := b.SetPolicy(breaker.Policy{Window: tt.window, Buckets: tt.buckets}); err != nil {
				t.Fatal(err)
			}
			if got := b.Snapshot().Window; got.Calls != tt.wantCalls || got.Failures != tt.wantCalls {
				t.Errorf("window %+v, want %d failed calls", got, tt.wantCalls)
			}
		})
	}
}

func TestSetPolicyCountWindowKeepsTheNewestCalls(t *testing.T) {
	b, _, _ := liveBreaker(t, breaker.Policy{WindowCalls: 10, MinimumCalls: 100})
	report(b, 3, breaker.Failure)
	report(b, 5, breaker.Success)
	if err := b.SetPolicy(breaker.Policy{WindowCalls: 6, MinimumCalls: 100}); err != nil {
		t.Fatal(err)
	}
	if got := b.Snapshot().Window; got.Calls != 6 || got.Failures != 1 {
		t.Errorf("window %+v, want the newest 6 calls: 1 failure, 5 successes", got)
	}
	if err := b.SetPolicy(breaker.Policy{MinimumCalls: 100}); err != nil { // count to time
		t.Fatal(err)
	}
	if got := b.Snapshot().Window; got.Calls != 0 {
		t.Errorf("window %+v after changing kind, want it empty", got)
	}
}

func TestSetPolicyRefusesABadValueAndKeepsTheOld(t *testing.T) {
	b, _, _ := liveBreaker(t, breaker.Policy{Version: "v1"})
	err := b.SetPolicy(breaker.Policy{FailureRateThreshold: 2, Version: "v2"})
	var ce *agentbreaker.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Policy.FailureRateThreshold" {
		t.Fatalf("error %v, want a ConfigError naming Policy.FailureRateThreshold", err)
	}
	if b.Policy().Version != "v1" {
		t.Errorf("version %q after a refused change, want v1", b.Policy().Version)
	}
}

func TestSetPolicyLetsPermitsInFlightReport(t *testing.T) {
	b, fc, _ := liveBreaker(t, breaker.Policy{MinimumCalls: 2})
	untimed, _ := b.Allow()
	if err := b.SetPolicy(breaker.Policy{MinimumCalls: 2, SlowCallThreshold: time.Second}); err != nil {
		t.Fatal(err)
	}
	timed, _ := b.Allow()
	untimed.Failure()
	if err := b.SetPolicy(breaker.Policy{MinimumCalls: 2}); err != nil { // slow calls off again
		t.Fatal(err)
	}
	fc.Advance(2 * time.Second)
	timed.Success()
	if got := b.Snapshot().Window; got.Calls != 2 || got.Failures != 1 || got.SlowCalls != 0 {
		t.Errorf("window %+v, want both calls admitted before the changes: 1 failure, none slow", got)
	}
}

func TestShadowFollowsThePolicy(t *testing.T) {
	b, _, _ := liveBreaker(t, breaker.Policy{})
	if b.Shadow() {
		t.Fatal("a new breaker is in shadow")
	}
	_ = b.SetPolicy(breaker.Policy{Shadow: true})
	if !b.Shadow() {
		t.Error("Shadow() false after SetPolicy(Shadow: true)")
	}
	if n := testing.AllocsPerRun(100, func() { _ = b.Shadow() }); n != 0 {
		t.Errorf("Shadow allocates %v times", n)
	}
}

// TestSetPolicyWhileCalling: policy changes race with calls and probes (run with -race).
func TestSetPolicyWhileCalling(t *testing.T) {
	b, fc, _ := liveBreaker(t, breaker.Policy{MinimumCalls: 5, Cooldown: 10 * time.Millisecond})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				v := breaker.Success
				if (i+g)%3 == 0 {
					v = breaker.Failure
				}
				report(b, 1, v)
				_ = b.Shadow()
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			p := breaker.Policy{MinimumCalls: 5 + i%3, Cooldown: 10 * time.Millisecond, HalfOpenProbes: 1 + i%3, Jitter: -1}
			if i%2 == 0 {
				p.SlowCallThreshold, p.WindowCalls = time.Millisecond, 50
			}
			if err := b.SetPolicy(p); err != nil {
				t.Error(err)
			}
			fc.Advance(5 * time.Millisecond)
		}
	})
	wg.Wait()
}
