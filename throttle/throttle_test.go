package throttle_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// report sends n calls, accepted of them accepted, at the clock's current time.
func report(th *throttle.Throttle, n, accepted int) {
	for i := range n {
		th.Report(i < accepted)
	}
}

func seeded(seed uint64) func() uint64 {
	r := rand.New(rand.NewPCG(seed, 1))
	var mu sync.Mutex
	return func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Uint64()
	}
}

func TestProbabilityIsTheSREFormulaOverTheWindow(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	th := throttle.MustNew(throttle.Config{Clock: fc, K: 2, MinRequests: 20, Window: 10 * time.Second, Buckets: 10})

	report(th, 19, 0)
	require.Zero(t, th.Probability(), "below MinRequests nothing is shed")

	report(th, 81, 25) // 100 requests, 25 accepted
	require.InDelta(t, (100-2*25)/101.0, th.Probability(), 1e-12)
	require.Equal(t, throttle.Counts{Requests: 100, Accepts: 25}, th.Counts())

	// Five seconds on, a healthy second half: 100 more, all accepted.
	fc.Advance(5 * time.Second)
	report(th, 100, 100)
	require.Zero(t, th.Probability(), "200 requests, 125 accepts: 200 < 2·125")

	// The first bucket leaves the window ten seconds after it started.
	fc.Advance(5 * time.Second)
	require.Equal(t, throttle.Counts{Requests: 100, Accepts: 100}, th.Counts())

	// A failing spell after the window has fully slid: only it counts.
	fc.Advance(30 * time.Second)
	report(th, 40, 10)
	require.InDelta(t, (40-20)/41.0, th.Probability(), 1e-12)
}

func TestKSetsHowMuchIsSentPerAccept(t *testing.T) {
	t.Parallel()
	for _, k := range []float64{1, 1.5, 2, 3} {
		fc := clock.NewFake(time.Time{})
		th := throttle.MustNew(throttle.Config{Clock: fc, K: k, MinRequests: 1})
		report(th, 100, 40)
		require.InDelta(t, max(0, (100-k*40)/101), th.Probability(), 1e-12, "K=%v", k)
	}
}

func TestAQuietSpellForgetsTheShedding(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	th := throttle.MustNew(throttle.Config{Clock: fc, K: 1, MinRequests: 1, Window: 10 * time.Second, Rand: seeded(1)})
	report(th, 100, 1)
	require.Greater(t, th.Probability(), 0.98)
	refused := 0
	for range 100 {
		if !th.Allow(throttle.Low) {
			refused++
		}
	}
	require.Greater(t, refused, 90)

	fc.Advance(11 * time.Second)
	require.True(t, th.Allow(throttle.Low), "the window slid past the failures")
	require.Zero(t, th.Probability())
}

// mix asks the throttle about n calls of each priority, as a shedding agent would.
func mix(th *throttle.Throttle, n int) {
	for range n {
		for _, pr := range throttle.Priorities() {
			th.Allow(pr)
		}
	}
}

// The rule of the package doc: p is taken from the lowest priorities first.
func TestPrioritiesAreShedLowestFirst(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	th := throttle.MustNew(throttle.Config{Clock: fc, K: 1, MinRequests: 1, Rand: seeded(2)})
	th.Report(true)
	th.Report(false)
	// No mix yet: every priority is shed at p.
	require.InDelta(t, 0.5, th.ShedProbability(0.5, throttle.Critical), 1e-12)
	mix(th, 10) // a quarter each
	tests := []struct {
		p    float64
		pr   throttle.Priority
		want float64
	}{
		{0.5, throttle.Low, 1},
		{0.5, throttle.Normal, 1},
		{0.5, 0, 1},
		{0.5, throttle.High, 0},
		{0.5, throttle.Critical, 0},
		{0.1, throttle.Low, 0.4},
		{0.1, throttle.Normal, 0},
		{0.6, throttle.High, 0.4},
		{0.9, throttle.Critical, 0.6},
		{1, throttle.Critical, 1},
	}
	for _, tt := range tests {
		require.InDelta(t, tt.want, th.ShedProbability(tt.p, tt.pr), 1e-9, "p=%v %s", tt.p, tt.pr)
	}
}

// Issue 43: at a few calls a bucket the priorities are still told apart. Decayed by a
// quarter each bucket, a mix fed two calls a bucket held about eight, under the 16 it
// needs, and every call was shed at p whatever its priority.
func TestPrioritiesAreToldApartAtAFewCallsABucket(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	th := throttle.MustNew(throttle.Config{Clock: fc, K: 1, MinRequests: 1, Window: 10 * time.Second, Buckets: 10})
	for range 100 {
		fc.Advance(time.Second) // a bucket
		report(th, 3, 1)
		require.True(t, th.Shedding())
		th.Allow(throttle.Low)
		th.Allow(throttle.Normal)
	}
	require.Equal(t, 1.0, th.ShedProbability(0.6, throttle.Low))
	require.InDelta(t, 0.2, th.ShedProbability(0.6, throttle.Normal), 0.02)
	require.InDelta(t, 0.8, th.ShedProbability(0.4, throttle.Low), 0.02)
	require.Zero(t, th.ShedProbability(0.4, throttle.Normal))
}

// At half the calls shed, critical calls are refused less than half as often as low
// ones: measured over real Allow calls, with p held near 0.5 by a large window.
func TestCriticalCallsAreShedLessThanHalfAsOftenAsLowAtHalfShedding(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	th := throttle.MustNew(throttle.Config{Clock: fc, K: 1, MinRequests: 1, Rand: seeded(7)})
	report(th, 400_000, 198_000) // p = 202000/400001 ≈ 0.505
	require.InDelta(t, 0.5, th.Probability(), 0.01)

	refused := map[throttle.Priority]int{}
	const calls = 4000
	for range calls {
		for _, pr := range throttle.Priorities() {
			if !th.Allow(pr) {
				refused[pr]++
			}
		}
	}
	total := refused[throttle.Low] + refused[throttle.Normal] + refused[throttle.High] + refused[throttle.Critical]
	require.InDelta(t, 0.5, float64(total)/(4*calls), 0.03, "the share refused is p: %v", refused)
	require.Less(t, refused[throttle.Critical]*2, refused[throttle.Low], "%v", refused)
	require.LessOrEqual(t, refused[throttle.High], refused[throttle.Normal])
	require.LessOrEqual(t, refused[throttle.Normal], refused[throttle.Low])
	require.Equal(t, uint64(refused[throttle.Critical]), th.Shed(throttle.Critical))
	require.Equal(t, uint64(refused[throttle.Low]), th.Shed(throttle.Low))
}

func TestCallsWithTheSameDrawAreShedTogether(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	th := throttle.MustNew(throttle.Config{Clock: fc, K: 1, MinRequests: 1})
	report(th, 1000, 500) // p ≈ 0.5; one priority: every call at p
	r := rand.New(rand.NewPCG(9, 9))
	together, shed := 0, 0
	for range 1000 {
		d := r.Uint64()
		a, b := th.AllowDraw(throttle.Normal, d), th.AllowDraw(throttle.Normal, d)
		if a == b {
			together++
		}
		if !a {
			shed++
		}
	}
	require.Equal(t, 1000, together, "one draw, one decision")
	require.Greater(t, shed, 400, "p starts near 0.5 and rises as refused calls add requests")
	require.Less(t, shed, 900)
}

func TestRefusedCallsCountAsRequests(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	th := throttle.MustNew(throttle.Config{Clock: fc, K: 1, MinRequests: 1, Rand: seeded(3)})
	report(th, 100, 1)
	refused := 0
	for range 50 {
		if !th.Allow(throttle.Low) {
			refused++
		}
	}
	require.Equal(t, throttle.Counts{Requests: uint64(100 + refused), Accepts: 1}, th.Counts())
}

func TestAnInjectedClockGoingBackDropsReports(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	th := throttle.MustNew(throttle.Config{Clock: fc, Window: 10 * time.Second, Buckets: 10})
	fc.Advance(25 * time.Second)
	report(th, 30, 0)
	fc.Advance(-10 * time.Second) // the bucket of 15s is the slot 25s uses
	report(th, 5, 5)
	fc.Advance(10 * time.Second)
	require.Equal(t, throttle.Counts{Requests: 30}, th.Counts())
	fc.Advance(-time.Hour) // before the throttle started
	th.Report(true)
}

func TestResetEmptiesTheWindow(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	th := throttle.MustNew(throttle.Config{Clock: fc, MinRequests: 1})
	report(th, 50, 1)
	require.Greater(t, th.Probability(), 0.9)
	th.Reset()
	require.True(t, th.Allow(throttle.Low))
	require.Zero(t, th.Probability())
}

func TestNewRefusesBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cfg   throttle.Config
		field string
		value string
	}{
		{"K below 1", throttle.Config{K: 0.5}, "K", "0.5"},
		{"K NaN", throttle.Config{K: math.NaN()}, "K", "NaN"},
		{"K infinite", throttle.Config{K: math.Inf(1)}, "K", "+Inf"},
		{"negative MinRequests", throttle.Config{MinRequests: -3}, "MinRequests", "-3"},
		{"negative Window", throttle.Config{Window: -time.Second}, "Window", "-1s"},
		{"tiny buckets", throttle.Config{Window: 5 * time.Millisecond, Buckets: 10}, "Window", "5ms"},
		{"negative Buckets", throttle.Config{Buckets: -1}, "Buckets", "-1"},
		{"too many Buckets", throttle.Config{Window: time.Hour, Buckets: 100_000}, "Buckets", "100000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := throttle.New(tt.cfg)
			var ce *agentbreaker.ConfigError
			require.True(t, errors.As(err, &ce), "%v", err)
			require.Equal(t, tt.field, ce.Field)
			require.Contains(t, err.Error(), tt.field+" = "+tt.value)
			require.Panics(t, func() { throttle.MustNew(tt.cfg) })
		})
	}
}

func TestParsePriority(t *testing.T) {
	t.Parallel()
	for _, pr := range throttle.Priorities() {
		got, err := throttle.ParsePriority(" " + pr.String() + " ")
		require.NoError(t, err)
		require.Equal(t, pr, got)
	}
	got, err := throttle.ParsePriority("")
	require.NoError(t, err)
	require.Equal(t, throttle.Normal, got)
	_, err = throttle.ParsePriority("urgent")
	require.ErrorContains(t, err, `"urgent"`)
}

func TestJudge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		class             classify.Class
		accepted, counted bool
	}{
		{classify.ClassNone, true, true},
		{classify.ClassNotFound, true, true},
		{classify.ClassValidation, true, true},
		{classify.ClassAuth, true, true},
		{classify.ClassRefused, true, true}, // the dependency answered and declined
		{classify.ClassHTTP429, false, true},
		{classify.ClassHTTP408, false, true},
		{classify.ClassTimeout, false, true},
		{classify.ClassConnectionRefused, false, true},
		{classify.ClassUnclassified, false, true},
		{classify.ClassCanceled, false, false},
		{classify.ClassBreakerOpen, false, false},
	}
	for _, tt := range tests {
		acc, counted := throttle.Judge(classify.ForClass(tt.class))
		require.Equal(t, [2]bool{tt.accepted, tt.counted}, [2]bool{acc, counted}, "%s", tt.class)
	}
	c503 := classify.ForClass(classify.ClassHTTP5xx)
	c503.Outcome = classify.Failed
	acc, counted := throttle.Judge(c503)
	require.False(t, acc, "a 503 is a capacity signal")
	require.True(t, counted)
}

func TestAllowAndReportAllocateNothing(t *testing.T) {
	healthy := throttle.MustNew(throttle.Config{})
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		if healthy.Allow(throttle.Normal) {
			healthy.Report(true)
		}
	}))
	shedding := throttle.MustNew(throttle.Config{MinRequests: 1})
	report(shedding, 100, 1)
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		if shedding.Allow(throttle.Low) {
			shedding.Report(false)
		}
	}))
}

func TestConcurrentReportsAreAllCounted(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	th := throttle.MustNew(throttle.Config{Clock: fc, MinRequests: 1, K: 1.5})
	const workers, each = 4, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if th.Allow(throttle.Priority(1 + (i+w)%4)) {
					th.Report(i%2 == 0)
				}
			}
		})
	}
	wg.Wait()
	c := th.Counts()
	var shed uint64
	for _, pr := range throttle.Priorities() {
		shed += th.Shed(pr)
	}
	require.Equal(t, uint64(workers*each), c.Requests, "every call is one request, sent or shed")
	require.Positive(t, c.Accepts)
	require.LessOrEqual(t, c.Accepts, c.Requests-shed, "only sent calls are accepted")
}

func TestATotalOutageIsLeftToTheBreaker(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Time{})
	th := throttle.MustNew(throttle.Config{Clock: fc, MinRequests: 1})
	report(th, 500, 0)
	require.Zero(t, th.Probability(), "nothing accepted: the breaker's outage, not the throttle's")
	th.Report(true)
	require.InDelta(t, (501-2)/502.0, th.Probability(), 1e-12)
}

// Reports racing across bucket boundaries: whatever order they land in, the buckets
// still in the window count exactly the reports made in them (older ones are reset,
// late ones for a reused slot dropped).
func TestRacingReportsAcrossBucketsCountTheWindowExactly(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	th := throttle.MustNew(throttle.Config{Clock: clock.NewFake(start), Window: 2 * time.Second, Buckets: 2, MinRequests: 1})
	const workers, epochs, each = 4, 20, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for e := range epochs {
				at := start.Add(time.Duration(e)*time.Second + time.Duration(w)*time.Millisecond)
				for i := range each {
					th.ReportAt(at, i%3 == 0)
				}
			}
		})
	}
	wg.Wait()
	got := th.CountsAt(start.Add((epochs-1)*time.Second + time.Millisecond*500))
	perEpochAccepts := uint64(workers * ((each + 2) / 3))
	require.Equal(t, throttle.Counts{Requests: 2 * workers * each, Accepts: 2 * perEpochAccepts}, got)
}
