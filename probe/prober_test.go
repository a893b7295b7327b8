package probe_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/internal/syncbuf"
	"github.com/agentbreaker/agentbreaker/probe"
)

// rig is one breaker on a fake clock, tripped, with a prober whose check the test
// scripts and whose timeouts fire only when the test says so.
type rig struct {
	clk     *clock.Fake
	b       *breaker.Breaker
	p       *probe.Prober
	log     *syncbuf.Buffer
	healthy atomic.Bool
	checks  atomic.Int32
	results []probe.Result
	mu      sync.Mutex
	timers  []func()
	armed   chan struct{} // a probe's timeout was started
}

func newRig(t *testing.T, pol breaker.Policy, check probe.Func, mod func(*probe.Config)) *rig {
	t.Helper()
	r := &rig{clk: clock.NewFake(time.Time{}), log: &syncbuf.Buffer{}, armed: make(chan struct{}, 16)}
	if pol.MinimumCalls == 0 {
		pol.MinimumCalls = 1
	}
	if pol.Jitter == 0 {
		pol.Jitter = -1
	}
	r.b = breaker.MustNew(breaker.Config{Name: "crm", Policy: pol, Clock: r.clk})
	if check == nil {
		check = func(context.Context) error {
			r.checks.Add(1)
			if r.healthy.Load() {
				return nil
			}
			return errors.New("connection refused")
		}
	}
	cfg := probe.Config{
		Checks: []probe.Check{{Breaker: r.b, Func: check, Name: "health"}},
		Clock:  r.clk,
		Logger: slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		AfterFunc: func(_ time.Duration, f func()) func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.timers = append(r.timers, f)
			r.armed <- struct{}{}
			return func() bool { return false }
		},
		OnResult: []func(probe.Result){func(res probe.Result) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.results = append(r.results, res)
		}},
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := probe.New(cfg)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	r.p = p
	return r
}

func (r *rig) trip(t *testing.T) {
	t.Helper()
	pm, err := r.b.Allow()
	require.NoError(t, err)
	pm.Failure()
	require.Equal(t, breaker.Open, r.b.State())
}

func (r *rig) last() probe.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results[len(r.results)-1]
}

func (r *rig) fired() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.results)
}

// TestAnIdleBreakerClosesWhenItsDependencyRecovers (issue 24c): nobody calls the
// dependency; the prober probes it every interval, without growth, and the breaker
// closes at the first probe after the recovery.
func TestAnIdleBreakerClosesWhenItsDependencyRecovers(t *testing.T) {
	r := newRig(t, breaker.Policy{Cooldown: 30 * time.Second, CooldownMultiplier: 2}, nil, nil)
	ctx := t.Context()
	next := r.p.ProbeDue(ctx)
	require.Equal(t, r.clk.Now().Add(30*time.Second), next, "closed: looked at again one interval later")
	require.Zero(t, r.checks.Load(), "a closed breaker is not probed")

	r.trip(t)
	start := r.clk.Now()
	for i := 1; i <= 6; i++ {
		r.clk.Set(next)
		require.Equal(t, start.Add(time.Duration(i)*30*time.Second), r.clk.Now(), "probe %d is one interval after the last: no growth", i)
		next = r.p.ProbeDue(ctx)
		require.Equal(t, int32(i), r.checks.Load())
		require.Equal(t, breaker.Open, r.b.State())
		_, err := r.b.Allow()
		var oe *breaker.OpenError
		require.ErrorAs(t, err, &oe, "user calls are answered locally")
	}
	r.healthy.Store(true)
	r.clk.Set(next)
	r.p.ProbeDue(ctx)
	require.Equal(t, breaker.Closed, r.b.State())
	require.True(t, r.last().Healthy)
	require.Equal(t, 1, strings.Count(r.log.String(), "health probe succeeded"))
	require.Equal(t, 6, strings.Count(r.log.String(), "health probe failed"), "one record per failed probe")
}

func TestMaxIntervalBoundsALongCooldown(t *testing.T) {
	r := newRig(t, breaker.Policy{Cooldown: 10 * time.Minute}, nil, func(c *probe.Config) { c.MaxInterval = time.Minute })
	r.trip(t)
	require.Equal(t, time.Minute, r.b.RetryAfter())
	r.clk.Advance(time.Minute)
	next := r.p.ProbeDue(t.Context())
	require.Equal(t, int32(1), r.checks.Load())
	require.Equal(t, r.clk.Now().Add(time.Minute), next)
}

// TestProbesOfManyDependenciesDoNotRunInLockstep (issue 24e): breakers that opened
// together get their next probes at different instants (the breaker's jitter).
func TestProbesOfManyDependenciesDoNotRunInLockstep(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	var checks []probe.Check
	seq := []float64{0.1, 0.5, 0.9}
	for i, v := range seq {
		b := breaker.MustNew(breaker.Config{Name: "dep" + string(rune('a'+i)), Clock: clk,
			Policy: breaker.Policy{MinimumCalls: 1, Jitter: 0.2}, Rand: func() float64 { return v }})
		checks = append(checks, probe.Check{Breaker: b, Func: func(context.Context) error { return errors.New("down") }})
	}
	p := probe.MustNew(probe.Config{Checks: checks, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	defer p.Close()
	seen := map[time.Duration]bool{}
	for _, c := range checks {
		pm, _ := c.Breaker.Allow()
		pm.Failure()
		seen[c.Breaker.RetryAfter()] = true
	}
	require.Len(t, seen, 3, "three dependencies, three different probe times: %v", seen)
	for d := range seen {
		require.GreaterOrEqual(t, d, 30*time.Second)
		require.Less(t, d, 36*time.Second)
	}
}

// TestBadProbes (issue 24e): a probe that panics, hangs past its timeout or returns
// nonsense is a failed probe with one clear log record; the breaker reopens for
// another interval and the next probe goes normally.
func TestBadProbes(t *testing.T) {
	tests := []struct {
		name    string
		check   func(r *rig) probe.Func
		problem string
		log     string
	}{
		{name: "panic", problem: "panic", log: "level=ERROR", check: func(*rig) probe.Func {
			return func(context.Context) error { panic("boom") }
		}},
		{name: "hang past its timeout", problem: "timeout", log: "took longer than 5s", check: func(r *rig) probe.Func {
			return func(ctx context.Context) error {
				go r.fireOnceArmed() // the timeout fires while the check waits
				<-ctx.Done()
				return ctx.Err()
			}
		}},
		{name: "nonsense: a typed nil error that panics when read", log: "its Error method panics", check: func(*rig) probe.Func {
			return func(context.Context) error {
				var e *badErr
				return e
			}
		}},
		{name: "nonsense: a neutral answer", problem: "neutral", log: "problem=neutral", check: func(*rig) probe.Func {
			return func(context.Context) error { return context.Canceled } // not the prober's context: says nothing
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *rig
			var bad atomic.Bool
			bad.Store(true)
			var check probe.Func
			returned := make(chan struct{}, 2)
			r = newRig(t, breaker.Policy{}, func(ctx context.Context) error {
				defer func() { returned <- struct{}{} }()
				if bad.Load() {
					return check(ctx)
				}
				return nil
			}, nil)
			check = tt.check(r)
			r.trip(t)
			r.clk.Advance(30 * time.Second)
			next := r.p.ProbeDue(t.Context())
			res := r.last()
			require.Equal(t, tt.problem, res.Problem, "%+v", res)
			require.False(t, res.Healthy)
			require.Equal(t, breaker.Open, res.State, "a bad probe is a failed probe")
			require.Equal(t, r.clk.Now().Add(30*time.Second), next)
			require.Equal(t, 1, strings.Count(r.log.String(), "health probe failed"), r.log.String())
			if tt.log != "" {
				require.Contains(t, r.log.String(), tt.log)
			}
			select { // the bad check has returned (a hung one once its context ended)
			case <-returned:
			case <-time.After(10 * time.Second):
				t.Fatal("the check never returned")
			}
			bad.Store(false)
			r.clk.Set(next)
			r.p.ProbeDue(t.Context())
			require.Equal(t, breaker.Closed, r.b.State(), "the breaker is not wedged")
			require.Zero(t, r.b.Snapshot().ProbesInFlight)
		})
	}
}

type badErr struct{ msg *string }

func (e *badErr) Error() string { return *e.msg }

// fireOnceArmed fires the probe's timeout as soon as it is started (within a bound:
// a test never waits without one).
func (r *rig) fireOnceArmed() {
	select {
	case <-r.armed:
		r.fire()
	case <-time.After(10 * time.Second):
		panic("the probe's timeout was never started")
	}
}

func (r *rig) fire() {
	r.mu.Lock()
	fs := r.timers
	r.timers = nil
	r.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// A check that ignores its context and never returns is not started twice: the next
// probe fails at once as still running, and the breaker keeps probing on schedule.
func TestACheckThatIgnoresItsContextIsNotStartedTwice(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	var r *rig
	r = newRig(t, breaker.Policy{}, func(context.Context) error {
		started.Add(1)
		go r.fireOnceArmed()
		<-release // ignores its context
		return nil
	}, nil)
	defer close(release)
	r.trip(t)
	r.clk.Advance(30 * time.Second)
	next := r.p.ProbeDue(t.Context())
	require.Equal(t, "timeout", r.last().Problem)
	r.clk.Set(next)
	r.p.ProbeDue(t.Context())
	require.Equal(t, "still_running", r.last().Problem)
	require.Equal(t, int32(1), started.Load())
	require.Equal(t, breaker.Open, r.b.State())
}

func TestConfigErrorsNameFieldAndValue(t *testing.T) {
	b := breaker.MustNew(breaker.Config{Name: "crm"})
	ok := func(context.Context) error { return nil }
	tests := []struct {
		name string
		cfg  probe.Config
		want string
	}{
		{"no checks", probe.Config{}, "Checks"},
		{"interval too short", probe.Config{Checks: []probe.Check{{Breaker: b, Func: ok}}, MaxInterval: time.Millisecond}, "MaxInterval = 1ms"},
		{"interval too long", probe.Config{Checks: []probe.Check{{Breaker: b, Func: ok}}, MaxInterval: 2 * time.Hour}, "MaxInterval = 2h0m0s"},
		{"no breaker", probe.Config{Checks: []probe.Check{{Func: ok}}}, "Checks[0].Breaker"},
		{"no func", probe.Config{Checks: []probe.Check{{Breaker: b}}}, "Checks[0].Func"},
		{"timeout past the lease", probe.Config{Checks: []probe.Check{{Breaker: b, Func: ok, Timeout: time.Minute}}}, "Checks[0].Timeout = 1m0s"},
		{"twice the same breaker", probe.Config{Checks: []probe.Check{{Breaker: b, Func: ok}, {Breaker: b, Func: ok}}}, "Checks[1].Breaker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := probe.New(tt.cfg)
			var ce *probe.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Contains(t, err.Error(), tt.want)
		})
	}
	require.False(t, b.HasProber(), "a refused configuration attaches nothing")
	p := probe.MustNew(probe.Config{Checks: []probe.Check{{Breaker: b, Func: ok}}})
	_, err := probe.New(probe.Config{Checks: []probe.Check{{Breaker: b, Func: ok}}})
	require.ErrorContains(t, err, "Checks[0].Breaker", "a breaker already probed")
	p.Close()
	require.False(t, b.HasProber())
}

// TestHTTPGetProbe: the health URL over a real socket, classified by httptransport:
// a 503 fails the probe, a 200 closes the breaker, a 404 (a wrong URL) fails it.
func TestHTTPGetProbe(t *testing.T) {
	srv := breakertest.NewServer(t)
	srv.Set(breakertest.Status(503))
	check, err := probe.HTTPGet(probe.HTTPConfig{URL: srv.URL + "/health"})
	require.NoError(t, err)
	r := newRig(t, breaker.Policy{}, check, nil)
	r.trip(t)
	r.clk.Advance(30 * time.Second)
	next := r.p.ProbeDue(t.Context())
	require.Equal(t, breaker.Open, r.b.State())
	require.Equal(t, "http_5xx", string(r.last().Classification.Class))

	srv.Set(breakertest.Status(404))
	r.clk.Set(next)
	next = r.p.ProbeDue(t.Context())
	require.Equal(t, breaker.Open, r.b.State(), "a 404 from the health URL is not healthy")

	srv.Set(breakertest.OK("ok"))
	r.clk.Set(next)
	r.p.ProbeDue(t.Context())
	require.Equal(t, breaker.Closed, r.b.State(), "%+v", r.last())
	require.Equal(t, int64(3), srv.Requests())
}

func TestHTTPGetRefusesAURLThatCannotWork(t *testing.T) {
	for _, u := range []string{"", "ftp://x/health", "/health", "http://"} {
		_, err := probe.HTTPGet(probe.HTTPConfig{URL: u})
		var ce *probe.ConfigError
		require.ErrorAs(t, err, &ce, u)
		require.Contains(t, err.Error(), "HTTPConfig.URL")
	}
}

// TestRunProbesOnItsOwn: Run with a Sleep that advances the fake clock probes on
// schedule and returns when its context ends.
func TestRunProbesOnItsOwn(t *testing.T) {
	var r *rig
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r = newRig(t, breaker.Policy{}, nil, func(c *probe.Config) {
		c.Sleep = func(ctx context.Context, d time.Duration) error {
			r.clk.Advance(d)
			if r.checks.Load() == 3 {
				r.healthy.Store(true)
			}
			if r.b.State() == breaker.Closed && r.fired() > 0 {
				cancel()
			}
			return ctx.Err()
		}
	})
	r.trip(t)
	start := r.clk.Now()
	require.ErrorIs(t, r.p.Run(ctx), context.Canceled)
	require.Equal(t, int32(4), r.checks.Load())
	require.Equal(t, breaker.Closed, r.b.State())
	require.Equal(t, start.Add(4*30*time.Second), r.last().At)
}

// A breaker that wants several successful probes gets them in one round, one at a time.
func TestSeveralProbesInOneRound(t *testing.T) {
	r := newRig(t, breaker.Policy{HalfOpenProbes: 3}, nil, nil)
	r.healthy.Store(true)
	r.trip(t)
	r.clk.Advance(30 * time.Second)
	r.p.ProbeDue(t.Context())
	require.Equal(t, int32(3), r.checks.Load())
	require.Equal(t, breaker.Closed, r.b.State())
	require.Equal(t, 3, r.fired())
}
