package adaptivelimit_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/throttle"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// waves runs count waves of n calls of latency, one every step from at, and returns
// when the next would start.
func waves(l *adaptivelimit.Limiter, at time.Time, count int, step time.Duration, n int, latency time.Duration) time.Time {
	for range count {
		wave(l, at, n, latency)
		at = at.Add(step)
	}
	return at
}

// wave starts n calls at at and ends each after latency; refused calls are counted.
func wave(l *adaptivelimit.Limiter, at time.Time, n int, latency time.Duration) (refused int) {
	var ps []adaptivelimit.Permit
	for range n {
		p, err := l.AcquireAt(at, throttle.Normal)
		if err != nil {
			refused++
			continue
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		p.DoneAt(at.Add(latency))
	}
	return refused
}

func TestConfigErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name  string
		cfg   adaptivelimit.Config
		field string
	}{
		{"max too big", adaptivelimit.Config{MaxLimit: 2_000_000}, "MaxLimit"},
		{"min over max", adaptivelimit.Config{MinLimit: 5, MaxLimit: 4}, "MinLimit"},
		{"initial under min", adaptivelimit.Config{MinLimit: 5, InitialLimit: 3}, "InitialLimit"},
		{"tolerance", adaptivelimit.Config{Tolerance: -1}, "Tolerance"},
		{"interval", adaptivelimit.Config{UpdateInterval: time.Microsecond}, "UpdateInterval"},
		{"samples", adaptivelimit.Config{MinSamples: -3}, "MinSamples"},
		{"no-load interval", adaptivelimit.Config{NoLoadInterval: time.Millisecond}, "NoLoadInterval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := adaptivelimit.New(tt.cfg)
			var ce *adaptivelimit.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Fatalf("New(%+v) = %v, want a ConfigError on %s", tt.cfg, err, tt.field)
			}
		})
	}
	l := adaptivelimit.MustNew(adaptivelimit.Config{MaxLimit: 10})
	if lo, hi := l.Bounds(); lo != 2 || hi != 10 || l.Limit() != 10 {
		t.Errorf("defaults under MaxLimit 10: bounds %d..%d, limit %d; want 2..10, 10", lo, hi, l.Limit())
	}
}

func TestRefusesByPriorityShareAtOnce(t *testing.T) {
	l := adaptivelimit.MustNew(adaptivelimit.Config{Name: "crm", InitialLimit: 10})
	admit := func(p throttle.Priority) error {
		_, err := l.AcquireAt(t0, p)
		return err
	}
	// Low may fill 6 of 10, Normal 8, High 9, Critical 10.
	for i := range 6 {
		if err := admit(throttle.Low); err != nil {
			t.Fatalf("low call %d: %v", i, err)
		}
	}
	err := admit(throttle.Low)
	var le *adaptivelimit.LimitError
	if !errors.As(err, &le) || !errors.Is(err, adaptivelimit.ErrLimited) || le.Limiter != "crm" || le.Limit != 10 || le.Allowed != 6 || le.Priority != throttle.Low {
		t.Fatalf("7th low call: %v (%+v), want a LimitError for 6 of 10", err, le)
	}
	for _, step := range []struct {
		p     throttle.Priority
		admit int
	}{{throttle.Normal, 2}, {throttle.High, 1}, {throttle.Critical, 1}} {
		for range step.admit {
			if err := admit(step.p); err != nil {
				t.Fatalf("%s: %v", step.p, err)
			}
		}
		if err := admit(step.p); err == nil {
			t.Fatalf("%s admitted past its share at %d in flight", step.p, l.InFlight())
		}
	}
	if got := l.InFlight(); got != 10 {
		t.Errorf("in flight %d, want 10", got)
	}
	want := map[throttle.Priority]uint64{throttle.Low: 1, throttle.Normal: 1, throttle.High: 1, throttle.Critical: 1}
	for p, n := range want {
		if got := l.Refused(p); got != n {
			t.Errorf("Refused(%s) = %d, want %d", p, got, n)
		}
	}
	if l.Refused(0) != l.Refused(throttle.Normal) {
		t.Error("the zero priority must read Normal's count")
	}
}

func TestLimitFallsWhenLatencyRisesAndRisesWhileNear(t *testing.T) {
	l := adaptivelimit.MustNew(adaptivelimit.Config{InitialLimit: 20, MinSamples: 5, UpdateInterval: time.Second})
	at := t0
	// 15 calls at once, 100ms each: uses more than half the limit at the no-load latency.
	for range 3 {
		wave(l, at, 15, 100*time.Millisecond)
		at = at.Add(time.Second)
	}
	if l.NoLoad() != 100*time.Millisecond {
		t.Fatalf("no-load %v, want 100ms", l.NoLoad())
	}
	grown := l.Limit()
	if grown <= 20 {
		t.Fatalf("limit %d after calls near the no-load latency with the limit in use: want it raised above 20", grown)
	}
	// 300ms: three times the no-load latency, well above the 125ms target.
	wave(l, at, 15, 300*time.Millisecond)
	at = at.Add(time.Second)
	wave(l, at, 15, 300*time.Millisecond)
	if got := l.Limit(); got >= grown || got > grown*5/8+1 {
		t.Fatalf("limit %d after latency tripled (was %d): want it cut to about target/sample = 5/12, at least 1/2", got, grown)
	}
	for range 20 {
		at = at.Add(time.Second)
		wave(l, at, 40, 300*time.Millisecond)
	}
	if !l.AtFloor() || l.Limit() != 2 {
		t.Errorf("limit %d after sustained slowness, want the floor 2", l.Limit())
	}
}

func TestLimitNotRaisedWhileHardlyUsed(t *testing.T) {
	l := adaptivelimit.MustNew(adaptivelimit.Config{InitialLimit: 20, MinSamples: 5, UpdateInterval: time.Second})
	at := t0
	for range 10 {
		// Nine calls at once, 100ms each: under half the limit of 20.
		wave(l, at, 9, 100*time.Millisecond)
		at = at.Add(time.Second)
	}
	if got := l.Limit(); got != 20 {
		t.Errorf("limit %d, want 20 kept: nothing showed the dependency takes more", got)
	}
}

func TestHangingCallsCutTheLimitBeforeAnyFinishes(t *testing.T) {
	l := adaptivelimit.MustNew(adaptivelimit.Config{InitialLimit: 20, MinSamples: 5, UpdateInterval: 500 * time.Millisecond})
	at := t0
	for range 4 {
		wave(l, at, 12, 100*time.Millisecond)
		at = at.Add(500 * time.Millisecond)
	}
	before := l.Limit()
	// From now on calls hang: 4 start every 100ms and none finishes.
	var held []adaptivelimit.Permit
	for i := range 30 {
		now := at.Add(time.Duration(i) * 100 * time.Millisecond)
		for range 4 {
			if p, err := l.AcquireAt(now, throttle.Normal); err == nil {
				held = append(held, p)
			}
		}
	}
	if l.Limit() != 2 {
		t.Errorf("limit %d (was %d) after 3s of calls that never finish, want the floor 2", l.Limit(), before)
	}
	if len(held) > before {
		t.Errorf("%d calls admitted into the hang, want at most the limit before it (%d)", len(held), before)
	}
	// The hung calls time out after 5s: their latency never becomes the no-load latency.
	for _, p := range held {
		p.TimedOutAt(at.Add(5 * time.Second))
	}
	if l.NoLoad() != 100*time.Millisecond || l.InFlight() != 0 {
		t.Errorf("no-load %v, in flight %d after the timeouts; want 100ms and 0", l.NoLoad(), l.InFlight())
	}
}

func TestNoLoadMeasuredAgainUnderHalfTheLimit(t *testing.T) {
	l := adaptivelimit.MustNew(adaptivelimit.Config{InitialLimit: 20, MinSamples: 5, UpdateInterval: time.Second, NoLoadInterval: 10 * time.Second})
	at := t0
	for range 3 {
		wave(l, at, 11, 100*time.Millisecond)
		at = at.Add(time.Second)
	}
	// The dependency is slower for good now: 200ms even unloaded. Before the next
	// measurement the limit falls (200ms is above the 125ms target).
	for !l.Measuring() {
		wave(l, at, 11, 200*time.Millisecond)
		at = at.Add(time.Second)
		if at.Sub(t0) > time.Minute {
			t.Fatal("no measurement within a minute")
		}
	}
	held := l.Limit()
	for l.Measuring() {
		if l.InFlight() != 0 {
			t.Fatal("calls left in flight")
		}
		if r := wave(l, at, 11, 200*time.Millisecond); r == 0 && held < 11 {
			t.Fatalf("measurement holds the limit at %d yet admitted 11", held)
		}
		at = at.Add(time.Second)
	}
	if l.NoLoad() != 200*time.Millisecond {
		t.Errorf("no-load %v after the measurement, want 200ms", l.NoLoad())
	}
	// A Release is no sample: a burst of fast failures does not lower it.
	for range 20 {
		p, err := l.AcquireAt(at, throttle.Normal)
		if err == nil {
			p.Release()
		}
	}
	wave(l, at.Add(2*time.Second), 6, 200*time.Millisecond)
	if l.NoLoad() != 200*time.Millisecond {
		t.Errorf("no-load %v after released calls, want 200ms", l.NoLoad())
	}
}

// Concurrent Acquire and Done under -race: every permit returns, and the calls in
// flight never pass the ceiling.
func TestConcurrentCallsKeepTheCounts(t *testing.T) {
	fake := clock.NewFake(t0)
	l := adaptivelimit.MustNew(adaptivelimit.Config{MaxLimit: 16, InitialLimit: 8, MinSamples: 3, UpdateInterval: time.Millisecond, Clock: fake})
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := 0
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				p, err := l.Acquire(throttle.Priority(1 + (g+i)%4))
				if err != nil {
					continue
				}
				mu.Lock()
				peak = max(peak, l.InFlight())
				mu.Unlock()
				fake.Advance(time.Millisecond)
				if i%7 == 0 {
					p.TimedOut()
				} else {
					p.Done()
				}
			}
		}()
	}
	wg.Wait()
	if l.InFlight() != 0 {
		t.Errorf("in flight %d after every call ended", l.InFlight())
	}
	if peak > 16 {
		t.Errorf("peak in flight %d above MaxLimit 16", peak)
	}
	if lim := l.Limit(); lim < 2 || lim > 16 {
		t.Errorf("limit %d outside 2..16", lim)
	}
}

func TestZeroPermitDoesNothing(t *testing.T) {
	var p adaptivelimit.Permit
	p.Done()
	p.TimedOut()
	p.Release()
	p.DoneAt(t0)
}

// A fake clock at the zero time (as many tests start one) is in range: times are kept
// relative to the limiter's creation, never as Unix nanoseconds (undefined before 1678).
func TestZeroTimeFakeClock(t *testing.T) {
	fake := clock.NewFake(time.Time{})
	l := adaptivelimit.MustNew(adaptivelimit.Config{InitialLimit: 10, MinSamples: 2, UpdateInterval: time.Second, Clock: fake})
	run := func(latency time.Duration) {
		for range 4 {
			var ps []adaptivelimit.Permit
			for range 6 {
				p, err := l.Acquire(throttle.Normal)
				if err == nil {
					ps = append(ps, p)
				}
			}
			fake.Advance(latency)
			for _, p := range ps {
				p.Done()
			}
			fake.Advance(time.Second)
		}
	}
	run(100 * time.Millisecond)
	if l.NoLoad() != 100*time.Millisecond {
		t.Fatalf("no-load %v, want 100ms", l.NoLoad())
	}
	run(time.Second)
	if l.Limit() >= 10 {
		t.Errorf("limit %d after calls ten times slower, want it cut", l.Limit())
	}
}

// Each tuning field is read: the same calls give another limit when it changes.
func TestEveryTuningFieldChangesTheOutcome(t *testing.T) {
	// Warm up at 100ms with 12 calls at once, then 4s of calls at 140ms: 1.4× the
	// no-load latency.
	limitAfter := func(cfg adaptivelimit.Config) int {
		cfg.InitialLimit = 20
		l := adaptivelimit.MustNew(cfg)
		at := waves(l, t0, 3, time.Second, 12, 100*time.Millisecond)
		waves(l, at, 8, 500*time.Millisecond, 12, 140*time.Millisecond)
		return l.Limit()
	}
	// At tolerance 0.25 the slow spell is above the target, so the other fields show.
	base := adaptivelimit.Config{Tolerance: 0.25, MinSamples: 5, UpdateInterval: 500 * time.Millisecond}
	tests := []struct {
		name       string
		a, b       adaptivelimit.Config
		wantLowerA bool
	}{
		// 140ms is above the 125ms target at tolerance 0.25, below 150ms at 0.5.
		{"Tolerance", base, with(base, func(c *adaptivelimit.Config) { c.Tolerance = 0.5 }), true},
		// One update in the slow spell instead of eight.
		{"UpdateInterval", base, with(base, func(c *adaptivelimit.Config) { c.UpdateInterval = 4 * time.Second }), true},
		// 12 samples per wave make an update; 50 need four waves.
		{"MinSamples", base, with(base, func(c *adaptivelimit.Config) { c.MinSamples = 50 }), true},
		{"MinLimit", base, with(base, func(c *adaptivelimit.Config) { c.MinLimit = 15 }), true},
	}
	for _, tt := range tests {
		a, b := limitAfter(tt.a), limitAfter(tt.b)
		t.Logf("%s: %d vs %d", tt.name, a, b)
		if tt.wantLowerA && a >= b {
			t.Errorf("%s: limit %d with %+v, %d with %+v; want the first lower", tt.name, a, tt.a, b, tt.b)
		}
	}
}

func with(c adaptivelimit.Config, f func(*adaptivelimit.Config)) adaptivelimit.Config {
	f(&c)
	return c
}

// The documented limit of a windowed minimum (docs/adaptive-concurrency.md, "When it is
// the wrong tool"): a dependency whose fast answers are another kind of answer (cache
// hits in 5ms beside misses in 200ms) has a no-load latency of its hits, and every
// window's mean is far above it, so the limit falls to its floor without any overload.
func TestBimodalLatencyDrivesTheLimitToItsFloor(t *testing.T) {
	l := adaptivelimit.MustNew(adaptivelimit.Config{InitialLimit: 20, MinSamples: 5, UpdateInterval: time.Second})
	at := t0
	for range 10 {
		wave(l, at, 6, 5*time.Millisecond)
		wave(l, at.Add(100*time.Millisecond), 6, 200*time.Millisecond)
		at = at.Add(time.Second)
	}
	if l.NoLoad() != 5*time.Millisecond || !l.AtFloor() {
		t.Errorf("no-load %v, limit %d; want the hits' 5ms and the floor", l.NoLoad(), l.Limit())
	}
}

// Times given to AcquireAt and DoneAt are the caller's timeline: the limiter's intervals
// count from the first of them, however far it is from the limiter's own clock (a fixed
// date in a test, a replayed trace). The same calls give the same limit whether they
// happen a year before the limiter was built or a year after, on the system clock or
// on a fake one.
func TestCallersTimelineWhateverItsDistanceFromTheClock(t *testing.T) {
	run := func(cfg adaptivelimit.Config, start time.Time) (time.Duration, int) {
		cfg.InitialLimit, cfg.MinSamples, cfg.UpdateInterval = 20, 5, time.Second
		l := adaptivelimit.MustNew(cfg)
		at := waves(l, start, 4, time.Second, 10, 100*time.Millisecond)
		waves(l, at, 4, time.Second, 10, 400*time.Millisecond)
		return l.NoLoad(), l.Limit()
	}
	now := time.Now()
	var want struct {
		noLoad time.Duration
		limit  int
	}
	want.noLoad, want.limit = run(adaptivelimit.Config{Clock: clock.NewFake(now)}, now)
	if want.noLoad != 100*time.Millisecond || want.limit >= 20 {
		t.Fatalf("on a fake clock: no-load %v, limit %d; want 100ms and under 20", want.noLoad, want.limit)
	}
	for _, tc := range []struct {
		name  string
		cfg   adaptivelimit.Config
		start time.Time
	}{
		{"system clock, a year before", adaptivelimit.Config{}, now.AddDate(-1, 0, 0)},
		{"system clock, a year after", adaptivelimit.Config{}, now.AddDate(1, 0, 0)},
		{"fake clock, a year before it", adaptivelimit.Config{Clock: clock.NewFake(now)}, now.AddDate(-1, 0, 0)},
		{"fixed date", adaptivelimit.Config{}, t0},
	} {
		nl, limit := run(tc.cfg, tc.start)
		if nl != want.noLoad || limit != want.limit {
			t.Errorf("%s: no-load %v, limit %d; want %v and %d", tc.name, nl, limit, want.noLoad, want.limit)
		}
	}
}

// The documented rise: at or under the target, with the limit in use, the limit grows
// by its square root times (target − sample)/(target − noLoad): all of it at the
// no-load latency, half of it halfway to the target, none at the target.
func TestRiseShrinksAsLatencyNearsTheTarget(t *testing.T) {
	after := func(latency time.Duration) int {
		// No-load 100ms, tolerance 0.5: the target is 150ms. Warm-up waves use 5 of
		// the 16 slots, under half, so they measure without raising the limit.
		l := adaptivelimit.MustNew(adaptivelimit.Config{InitialLimit: 16, Tolerance: 0.5, MinSamples: 5, UpdateInterval: time.Second})
		at := t0
		for range 3 {
			wave(l, at, 5, 100*time.Millisecond)
			at = at.Add(time.Second)
		}
		if l.NoLoad() != 100*time.Millisecond || l.Limit() != 16 {
			t.Fatalf("after the warm-up: no-load %v, limit %d; want 100ms and 16", l.NoLoad(), l.Limit())
		}
		wave(l, at, 10, latency) // 10 of 16 in use
		wave(l, at.Add(time.Second), 1, latency)
		return l.Limit()
	}
	for _, tc := range []struct {
		latency time.Duration
		want    int
	}{
		{100 * time.Millisecond, 20}, // 16 + √16
		{125 * time.Millisecond, 18}, // 16 + √16 × ½
		{150 * time.Millisecond, 16}, // at the target: no rise
	} {
		if got := after(tc.latency); got != tc.want {
			t.Errorf("calls at %v: limit %d, want %d", tc.latency, got, tc.want)
		}
	}
}

// A slow trickle of calls is not a stall: two calls a second at random, each answering
// in 200ms (±10%), often leave an update interval in which no call ends while one is in
// flight. The stall is what a dependency that hangs shows, so it must count only the
// time a call is known to have been in flight, not the time since the last call ended:
// read that way, a call admitted just before a check counted as stalled since the check
// before, and the limit halved, with nothing slower, down towards its floor.
func TestSlowTrickleIsNotAStall(t *testing.T) {
	l := adaptivelimit.MustNew(adaptivelimit.Config{InitialLimit: 20})
	type event struct {
		at time.Time
		p  *adaptivelimit.Permit // nil: an arrival
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	var events []event
	for at := t0; at.Before(t0.Add(5 * time.Minute)); {
		at = at.Add(time.Duration(rnd.ExpFloat64() / 2 * float64(time.Second)))
		events = append(events, event{at: at})
	}
	latency := func() time.Duration { return time.Duration(float64(200*time.Millisecond) * (0.9 + 0.2*rnd.Float64())) }
	lowest := l.Limit()
	for len(events) > 0 {
		i := 0
		for j := range events {
			if events[j].at.Before(events[i].at) {
				i = j
			}
		}
		e := events[i]
		events = append(events[:i], events[i+1:]...)
		if e.p != nil {
			e.p.DoneAt(e.at)
			continue
		}
		p, err := l.AcquireAt(e.at, throttle.Normal)
		if err != nil {
			t.Fatalf("refused at %v with the limit at %d", e.at.Sub(t0), l.Limit())
		}
		events = append(events, event{at: e.at.Add(latency()), p: &p})
		if !l.Measuring() { // a no-load measurement holds the limit at half, by design
			lowest = min(lowest, l.Limit())
		}
	}
	if nl := l.NoLoad(); nl < 180*time.Millisecond || nl > 200*time.Millisecond {
		t.Errorf("no-load %v, want the fastest answers' 180ms or so", nl)
	}
	if lowest != 20 {
		t.Errorf("the limit fell to %d during five minutes of a steady trickle; want it at 20 throughout", lowest)
	}
}

// A stall cuts the limit in proportion at once: a mean latency falls by half at most per
// update (a window of a few calls is noisy), but calls known to be in flight for a
// stall's length with none ending are no noise. No-load 100ms and tolerance 0.4 make a
// target of 140ms; after a check arms the stall, the next one 500ms later reads it, and
// a limit of 40 becomes 40 × 140/500, 11, instead of the halving's 20.
func TestAStallCutsTheLimitInProportion(t *testing.T) {
	l := adaptivelimit.MustNew(adaptivelimit.Config{InitialLimit: 40, MinSamples: 5, UpdateInterval: 500 * time.Millisecond})
	at := waves(l, t0, 4, 500*time.Millisecond, 5, 100*time.Millisecond) // 5 of 40: never half in use
	if l.NoLoad() != 100*time.Millisecond || l.Limit() != 40 {
		t.Fatalf("after the warm-up: no-load %v, limit %d; want 100ms and 40", l.NoLoad(), l.Limit())
	}
	// From now on calls hang; one arrives every 500ms and none ends.
	for i := range 3 {
		if _, err := l.AcquireAt(at.Add(time.Duration(i)*500*time.Millisecond), throttle.Normal); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.Limit(); got != 11 {
		t.Errorf("limit %d after a stall of 500ms read at once, want 11 (40 × 140/500)", got)
	}
}

// PriorityMatters is false exactly while every priority would be admitted: with a limit
// of 10, until Low's share (6) is in flight; and false again once the calls have ended.
func TestPriorityMattersFromLowsShare(t *testing.T) {
	l := adaptivelimit.MustNew(adaptivelimit.Config{Name: "crm", InitialLimit: 10})
	var ps []adaptivelimit.Permit
	for i := range 10 {
		if got, want := l.PriorityMatters(), i >= 6; got != want {
			t.Fatalf("with %d in flight PriorityMatters() = %v, want %v", i, got, want)
		}
		if !l.PriorityMatters() {
			// The promise a caller skips the lookup on: a Low call is admitted.
			p, err := l.AcquireAt(t0, throttle.Low)
			if err != nil {
				t.Fatalf("PriorityMatters() was false but a low call was refused: %v", err)
			}
			ps = append(ps, p)
			continue
		}
		p, err := l.AcquireAt(t0, throttle.Critical)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if _, err := l.AcquireAt(t0, throttle.Low); err == nil {
		t.Fatal("a low call was admitted with the limit full")
	}
	for _, p := range ps {
		p.DoneAt(t0.Add(time.Millisecond))
	}
	if l.PriorityMatters() {
		t.Errorf("PriorityMatters() is true with nothing in flight (limit %d)", l.Limit())
	}
}

// A limit of one is reached by the slot its stripe keeps free after a call: PriorityMatters
// counts the calls in flight, not the slots parked, so it stays false between calls.
func TestPriorityMattersIgnoresParkedSlots(t *testing.T) {
	l := adaptivelimit.MustNew(adaptivelimit.Config{Name: "crm", InitialLimit: 1, MinLimit: 1})
	for i := range 3 {
		if l.PriorityMatters() {
			t.Fatalf("call %d: PriorityMatters() with nothing in flight", i)
		}
		p, err := l.AcquireAt(t0, throttle.Low)
		if err != nil {
			t.Fatal(err)
		}
		if !l.PriorityMatters() {
			t.Fatalf("call %d: PriorityMatters() false with the limit of one in flight", i)
		}
		p.DoneAt(t0.Add(time.Millisecond))
	}
}
