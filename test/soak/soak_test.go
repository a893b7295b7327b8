package soak

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/internal/faultproxy"
	"github.com/agentbreaker/agentbreaker/journal"
)

const replicaCount = 3

// Bounds of the growth invariants, over the second half of the run (least-squares
// slope times the half's length): goroutines may grow by at most 30 plus 10% of their
// mean, the live heap (after a GC) by at most 8 MiB plus 15% of its mean.
const (
	goroutineSlack = 30
	goroutineShare = 0.10
	heapSlack      = 8 << 20
	heapShare      = 0.15
	// openGrace is how long after one replica opens a breaker the others may still
	// send: they learn of it at their next sync.
	openGrace = 3*syncInterval + opTimeout + 500*time.Millisecond
)

var turnKinds = []string{"orders", "ledger", "billing", "mixed", "workflow"}

// run is the state of one soak.
type run struct {
	t        *testing.T
	seed     int64
	total    time.Duration
	start    time.Time
	world    *worldProc
	redis    *redisProc
	pg       *faultproxy.Proxy
	replicas []*replica
	obs      *observer
	env      *replicaEnv

	turns, answered, workflowTurns atomic.Int64
	completed                      atomic.Int64 // turns that returned
	crash                          *replicaProc
	unanswered                     []string
	mu                             sync.Mutex
	latency, share, pluginTime     *reservoir
	faultCount                     map[string]int
	excluded                       [][2]time.Time // wall-time windows where the fleet may decide locally
	samples                        []sample
}

type sample struct {
	at         time.Duration
	goroutines int
	heap       uint64
}

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak runs for minutes; -short skips it")
	}
	total := *soakFor
	if total == 0 {
		total = *soakShort
		if total == 0 {
			total = 100 * time.Second
		}
	}
	if dl, ok := t.Deadline(); ok && time.Until(dl) < total+2*time.Minute {
		t.Fatalf("-soak=%v needs a -timeout of at least %v (go test's default is 10m)", total, (total + 5*time.Minute).Round(time.Minute))
	}
	seed := *soakSeed
	if seed == 0 {
		seed = time.Now().UnixNano() % 1_000_000_007
	}
	r := &run{t: t, seed: seed, total: total, obs: newObserver(), faultCount: map[string]int{},
		latency: newReservoir(seed), share: newReservoir(seed + 1), pluginTime: newReservoir(seed + 2)}
	t.Logf("soak: seed %d (rerun with -soak-seed=%d), %v, %d sessions, %d replicas", seed, seed, total, *soakConc, replicaCount)

	pgDSN, pg := pgBehindProxy(t)
	r.pg = pg
	r.redis = startRedis(t)
	r.world = startWorld(t)
	prefix := "soak" + strings.ToLower(rand.Text()[:10]) + "_"
	t.Cleanup(func() {
		if err := dropTables(context.Background(), prefix); err != nil {
			t.Logf("dropping %s*: %v", prefix, err)
		}
	})
	r.env = &replicaEnv{addrs: r.world.addrs, redisAddr: r.redis.addr(), pgDSN: pgDSN, prefix: prefix,
		app: "soak" + strings.ToLower(rand.Text()[:6]), hashKey: []byte("soak-journal-secret-0123456789"), obs: r.obs}
	ctx, cancel := context.WithTimeout(context.Background(), total+3*time.Minute)
	defer cancel()
	for i := range replicaCount {
		rep, err := newReplica(ctx, r.env, i)
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		r.replicas = append(r.replicas, rep)
	}
	defer func() {
		for _, rep := range r.replicas {
			rep.close()
		}
	}()

	r.crash = newReplicaProc(t, childEnv{Addrs: r.world.addrs, Redis: r.redis.addr(), PG: pgDSN, Prefix: prefix,
		App: r.env.app, HashKey: r.env.hashKey, Seed: seed}, r.obs)
	if err := r.crash.start(); err != nil {
		t.Fatalf("replica process: %v", err)
	}

	faults := schedule(seed, total, replicaCount)
	t.Logf("fault schedule (seed %d):\n%s", seed, describeSchedule(faults))

	r.start = time.Now()
	stop := r.start.Add(total)
	var wg sync.WaitGroup
	for i := range *soakConc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.drive(ctx, i, stop)
		}()
	}
	for _, f := range faults {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.inject(ctx, f)
		}()
	}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		r.sample(ctx, stop)
	}()
	wg.Wait()
	<-sampled
	r.crash.kill()

	r.check(ctx)
}

// drive runs sessions one after another until stop: each on a replica, one or two turns.
func (r *run) drive(ctx context.Context, id int, stop time.Time) {
	rng := mrand.New(mrand.NewPCG(uint64(r.seed), uint64(id)))
	for n := 0; time.Now().Before(stop); n++ {
		rep := r.replicas[rng.IntN(len(r.replicas))]
		kind := turnKinds[rng.IntN(len(turnKinds))]
		if kind == "workflow" {
			r.workflowTurn(ctx, rep, fmt.Sprintf("w%d-%d", id, n))
			think(ctx, rng)
			continue
		}
		sid, err := rep.chat.NewSession(ctx)
		if err != nil {
			r.fail("session: " + err.Error())
			continue
		}
		for k := range 1 + rng.IntN(2) {
			op := fmt.Sprintf("d%d-%d-%d", id, n, k)
			if k > 0 {
				kind = turnKinds[rng.IntN(len(turnKinds)-1)]
			}
			r.chatTurn(ctx, rep, sid, kind, op)
			think(ctx, rng)
		}
		_ = rep.chat.Sessions.Delete(ctx, &session.DeleteRequest{AppName: "soak", UserID: "user", SessionID: sid})
	}
}

// think pauses a session between turns (50 to 250 ms), as a user does, so that the
// soak loads the stack without taking a shared machine's every core.
func think(ctx context.Context, rng *mrand.Rand) {
	select {
	case <-time.After(time.Duration(50+rng.IntN(200)) * time.Millisecond):
	case <-ctx.Done():
	}
}

func (r *run) chatTurn(ctx context.Context, rep *replica, sid, kind, op string) {
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r.turns.Add(1)
	began := time.Now()
	turn, err := rep.chat.Run(tctx, sid, "kind="+kind+" op="+op)
	took := time.Since(began)
	var inPlugin time.Duration
	if turn != nil {
		inPlugin = rep.timing.take(turn.InvocationID())
	}
	if err != nil || turn == nil || len(turn.Errs) > 0 || strings.TrimSpace(turn.FinalText()) == "" {
		why := fmt.Sprintf("%s turn %s on r%d: ", kind, op, rep.id)
		switch {
		case err != nil:
			why += err.Error()
		case turn == nil:
			why += "no turn"
		case len(turn.Errs) > 0:
			why += turn.Errs[0].Error()
		default:
			why += "no final text"
		}
		r.fail(why)
	} else {
		r.answered.Add(1)
	}
	if turn != nil {
		r.scanTurn(kind, turn)
	}
	r.completed.Add(1)
	r.latency.add(float64(took.Microseconds()) / 1000)
	r.pluginTime.add(float64(inPlugin.Microseconds()) / 1000)
	if took > 0 {
		r.share.add(float64(inPlugin) / float64(took))
	}
}

func (r *run) workflowTurn(ctx context.Context, rep *replica, op string) {
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r.turns.Add(1)
	r.workflowTurns.Add(1)
	sid, err := rep.flow.NewSession(tctx)
	if err != nil {
		r.fail("workflow session: " + err.Error())
		return
	}
	defer func() {
		_ = rep.flow.Sessions.Delete(ctx, &session.DeleteRequest{AppName: "soakflow", UserID: "user", SessionID: sid})
	}()
	turn, err := rep.flow.Run(tctx, sid, "check stock "+op)
	r.completed.Add(1)
	switch {
	case err != nil:
		r.fail("workflow " + op + ": " + err.Error())
	case len(turn.Errs) > 0:
		r.fail("workflow " + op + ": " + turn.Errs[0].Error())
	default:
		r.answered.Add(1)
	}
	if turn != nil {
		r.scanTurn("workflow", turn)
	}
}

// scanTurn checks everything the user was shown: texts, error messages, outputs.
func (r *run) scanTurn(kind string, turn *breakertest.Turn) {
	var sb strings.Builder
	for _, ev := range turn.Events {
		if ev == nil {
			continue
		}
		sb.WriteString(ev.ErrorMessage)
		if ev.Content != nil {
			for _, p := range ev.Content.Parts {
				sb.WriteString(p.Text)
				if p.FunctionResponse != nil {
					sb.WriteString(fmt.Sprint(p.FunctionResponse.Response))
				}
			}
		}
	}
	r.obs.scanAnswer(kind+" answer", sb.String())
}

func (r *run) fail(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.unanswered) < 20 {
		r.unanswered = append(r.unanswered, why)
	}
}

// inject applies one fault at its time and undoes it at its end.
func (r *run) inject(ctx context.Context, f fault) {
	if !sleepUntil(ctx, r.start.Add(f.start)) {
		return
	}
	began := time.Now()
	var undo func()
	switch f.kind {
	case faultDepDown, faultDepPartial, faultDepSlow, faultDep429:
		mode := map[string]string{faultDepDown: modeDown, faultDepPartial: modePartial, faultDepSlow: modeSlow, faultDep429: mode429}[f.kind]
		r.must(r.world.fault(f.target, mode))
		undo = func() { r.must(r.world.fault(f.target, modeOK)) }
	case faultModel:
		r.must(r.world.fault("model", modeDown))
		undo = func() { r.must(r.world.fault("model", modeOK)) }
	case faultModel429:
		r.must(r.world.fault("model", mode429))
		undo = func() { r.must(r.world.fault("model", modeOK)) }
	case faultRedis:
		r.redis.kill()
		undo = func() {
			if err := r.redis.start(); err != nil {
				r.t.Errorf("restarting redis: %v", err)
			}
		}
	case faultPostgres:
		r.pg.Set(faultproxy.Cut)
		undo = func() { r.pg.Set(faultproxy.Pass) }
	case faultReplicaKill:
		r.crash.kill()
		undo = func() {
			if err := r.crash.start(); err != nil {
				r.t.Errorf("restarting the replica process: %v", err)
			}
			// Until its first sync the new process decides alone (the fleet's state is
			// not known yet: TestJoiningReplicaRespectsAnOpenFleetBreaker).
			r.crash.waitReport(ctx, 30*time.Second)
		}
	case faultClock, faultClockBack:
		rep := r.replicas[int(f.target[1]-'0')]
		rep.clk.Step(f.step)
		undo = func() { rep.clk.Step(-f.step) }
	}
	sleepUntil(ctx, began.Add(f.dur))
	undo()
	ended := time.Now()
	r.t.Logf("fault %s %s: %s to %s", f.kind, f.target, began.Format("15:04:05.000"), ended.Format("15:04:05.000"))
	r.mu.Lock()
	r.faultCount[f.kind]++
	switch f.kind {
	case faultRedis:
		// Without Redis each replica decides alone; after it, one more sync to agree.
		r.excluded = append(r.excluded, [2]time.Time{began, ended.Add(2 * time.Second)})
	case faultClock, faultClockBack, faultReplicaKill:
		r.excluded = append(r.excluded, [2]time.Time{began, ended.Add(2 * time.Second)})
	}
	r.mu.Unlock()
}

func (r *run) must(err error) {
	if err != nil {
		r.t.Errorf("fault control: %v", err)
	}
}

func sleepUntil(ctx context.Context, at time.Time) bool {
	select {
	case <-time.After(time.Until(at)):
		return true
	case <-ctx.Done():
		return false
	}
}

// sample records goroutines and the live heap every second, and checks the running
// invariants every ten.
func (r *run) sample(ctx context.Context, stop time.Time) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r.mu.Lock()
		r.samples = append(r.samples, sample{at: time.Since(r.start), goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc})
		r.mu.Unlock()
		if n%10 == 0 {
			r.checkRunning()
		}
		if time.Now().After(stop) {
			return
		}
	}
}

// checkRunning checks, while the soak runs, what must hold at every moment.
func (r *run) checkRunning() {
	if n := r.obs.leakCount.Load(); n > 0 {
		_, _, leaks := r.obs.counts()
		r.t.Errorf("upstream text reached the model or a user (%d times so far); first: %s", n, leaks[0])
	}
	if n := r.obs.panics.Load(); n > 0 {
		r.t.Errorf("%d callback panics", n)
	}
	st, err := r.world.stats()
	if err != nil {
		return
	}
	if dups := duplicates(st); len(dups) > 0 {
		r.t.Errorf("mutations applied twice (so far): %s", firstFew(dups))
	}
}

func duplicates(st worldStats) []string {
	var dups []string
	for op, n := range st.Applied {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s×%d keys %v", op, n, st.Keys[op]))
		}
	}
	sort.Strings(dups)
	return dups
}

// firstFew shortens a list for a message.
func firstFew(s []string) string {
	if len(s) > 5 {
		return fmt.Sprintf("%v and %d more", s[:5], len(s)-5)
	}
	return fmt.Sprint(s)
}

// figures is what the summary prints and the page shows.
type figures struct {
	Seed                      int64
	Duration                  time.Duration
	Turns, Answered, Workflow int64
	ModelRequests             int64
	Failovers, Unavailable    int64
	Faults                    map[string]int
	Applied, Duplicates       int
	KeyMissing, IntentMissing int
	IntentDenied              int
	Leaks                     int64
	Panics                    int64
	OpenViolations            int
	OpenIntervals             int
	Transitions               int
	GoroutineGrowth           float64
	GoroutineMean             float64
	HeapGrowth, HeapMean      float64
	LatencyP50, LatencyP99    float64
	PluginP50, PluginP99      float64
	ShareP50, ShareP99        float64
	CrashTurns, CrashAnswered int64
	Incarnations              int
	ReconciledApplied         int
	ReconciledNot             int
	ReconciledAwaiting        int
	Corrupt                   int
	Requests                  map[string]int64
	Models                    map[string]int
	Events                    map[string]int
	Payloads                  map[string]int
}

// check runs the final invariants and prints the summary.
func (r *run) check(ctx context.Context) {
	t := r.t
	st, err := r.world.stats()
	if err != nil {
		t.Fatalf("world stats: %v", err)
	}
	events, pl, leaks := r.obs.counts()
	f := figures{Seed: r.seed, Duration: r.total, Turns: r.turns.Load(), Answered: r.answered.Load(), Workflow: r.workflowTurns.Load(),
		ModelRequests: r.obs.modelRequests.Load(), Failovers: r.obs.failovers.Load(), Unavailable: r.obs.unavailableAnswers.Load(),
		Faults: r.faultCount, Applied: len(st.Applied), Leaks: r.obs.leakCount.Load(), Panics: r.obs.panics.Load(),
		Requests: st.Requests, Models: st.Models, Events: events, Payloads: pl}

	crash, incarnations := r.crash.totals()
	f.CrashTurns, f.CrashAnswered, f.Incarnations = crash.Completed, crash.Answered, incarnations
	f.ReconciledApplied, f.ReconciledNot, f.ReconciledAwaiting = crash.ReconciledApplied, crash.ReconciledNot, crash.ReconciledAwaiting
	f.Leaks += crash.Leaks
	f.Panics += crash.Panics
	if crash.FirstLeak != "" {
		leaks = append(leaks, "replica process: "+crash.FirstLeak)
	}
	if crash.ReconcileError != "" {
		t.Errorf("the restarted replica could not reconcile its journal: %s", crash.ReconcileError)
	}
	if crash.Completed != crash.Answered {
		t.Errorf("the replica process left %d of %d returned turns unanswered; first: %v", crash.Completed-crash.Answered, crash.Completed, crash.Unanswered)
	}
	// A last reconciliation: every row intact, nothing a crash left open unaccounted for.
	if rep, err := r.replicas[0].j.Reconcile(ctx); err != nil {
		t.Errorf("reconciling at the end: %v", err)
	} else {
		f.Corrupt = len(rep.Corrupt)
		if f.Corrupt > 0 {
			t.Errorf("%d journal rows failed their checks: %v", f.Corrupt, rep.Corrupt[0])
		}
	}

	// No mutation applied twice; every applied one carried its key; its intent was durable.
	dups := duplicates(st)
	f.Duplicates = len(dups)
	j := r.replicas[0].j
	for _, op := range sortedKeys(st.Applied) {
		for _, key := range st.Keys[op] {
			if key == "" {
				f.KeyMissing++
				continue
			}
			in, err := j.Intents(ctx, journal.Filter{IdempotencyKey: key})
			if err != nil {
				t.Errorf("reading the journal: %v", err)
				break
			}
			if len(in) == 0 {
				f.IntentMissing++
				if f.IntentMissing <= 3 {
					t.Errorf("operation %s was applied under key %s but the journal has no intent for it", op, key)
				}
				continue
			}
			// The service applied it: no record may say that it never happened, or an
			// operator would be invited to send it again.
			denied := true
			var states []string
			for _, it := range in {
				states = append(states, string(it.State))
				switch it.State {
				case journal.StateFailed, journal.StateFailedBeforeSend, journal.StateNotApplied:
				default:
					denied = false
				}
			}
			if denied {
				f.IntentDenied++
				if f.IntentDenied <= 3 {
					t.Errorf("operation %s was applied under key %s but its intents say it was not: %v", op, key, states)
				}
			}
		}
	}
	f.OpenViolations, f.OpenIntervals, f.Transitions = r.checkOpenBreakers(st)
	f.GoroutineGrowth, f.GoroutineMean, f.HeapGrowth, f.HeapMean = r.growth()
	f.LatencyP50, f.LatencyP99 = r.latency.quantile(0.5), r.latency.quantile(0.99)
	f.PluginP50, f.PluginP99 = r.pluginTime.quantile(0.5), r.pluginTime.quantile(0.99)
	f.ShareP50, f.ShareP99 = r.share.quantile(0.5), r.share.quantile(0.99)

	t.Logf("tool errors that carried a dependency's marked text to the plugin: %d (none may reach the model)", markedErrors.Load())
	summary := f.summary()
	t.Log("\n" + summary)
	if *soakPage != "" {
		if err := writePage(*soakPage, f); err != nil {
			t.Errorf("writing %s: %v", *soakPage, err)
		}
	}

	if f.Answered != f.Turns {
		t.Errorf("%d of %d turns were not answered; first: %s", f.Turns-f.Answered, f.Turns, strings.Join(r.unanswered, "\n  "))
	}
	if f.Duplicates > 0 {
		t.Errorf("%d mutations applied twice: %s", len(dups), firstFew(dups))
	}
	if f.KeyMissing > 0 {
		t.Errorf("%d mutations reached the server without an idempotency key", f.KeyMissing)
	}
	if f.Leaks > 0 {
		t.Errorf("upstream text reached the model or a user %d times:\n%s", f.Leaks, strings.Join(leaks, "\n"))
	}
	if f.Panics > 0 {
		t.Errorf("%d callback panics", f.Panics)
	}
	if f.OpenViolations > 0 {
		t.Errorf("%d calls reached a dependency while its breaker was open in the fleet (past the %v it takes to learn of it)", f.OpenViolations, openGrace)
	}
	if lim := goroutineSlack + goroutineShare*f.GoroutineMean; f.GoroutineGrowth > lim {
		t.Errorf("goroutines grew by %.1f over the second half (bound %.1f)", f.GoroutineGrowth, lim)
	}
	if lim := heapSlack + heapShare*f.HeapMean; f.HeapGrowth > lim {
		t.Errorf("the live heap grew by %.1f MiB over the second half (bound %.1f MiB)", f.HeapGrowth/(1<<20), lim/(1<<20))
	}
	for _, k := range faultKinds {
		if f.Faults[k] == 0 {
			t.Errorf("the schedule never ran a fault of kind %q", k)
		}
	}
	if f.Incarnations < 2 {
		t.Errorf("the replica process ran %d times: it was never killed and restarted", f.Incarnations)
	}
	if f.Turns < 50 {
		t.Errorf("only %d turns ran: the soak did not load the stack", f.Turns)
	}
}

// checkOpenBreakers counts the calls that reached a dependency while its breaker was
// open anywhere in the fleet: from the first replica's trip (plus openGrace, the time
// the others take to learn of it) to the first replica leaving open (a probe), outside
// the windows where replicas decide alone (Redis down, a stepped clock).
func (r *run) checkOpenBreakers(st worldStats) (violations, intervals, transitions int) {
	trs := r.obs.snapshotTransitions()
	transitions = len(trs)
	r.mu.Lock()
	excluded := append([][2]time.Time(nil), r.excluded...)
	r.mu.Unlock()
	for _, dep := range toolDeps {
		var spans [][2]time.Time
		var openSince time.Time
		for _, tr := range trs {
			if tr.dep != dep || tr.from == tr.to {
				continue
			}
			switch {
			case tr.to == breaker.Open && openSince.IsZero():
				openSince = tr.at
			case tr.from == breaker.Open && !openSince.IsZero():
				spans = append(spans, [2]time.Time{openSince, tr.at})
				openSince = time.Time{}
			}
		}
		intervals += len(spans)
		for _, ns := range st.Arrivals[dep] {
			at := time.Unix(0, ns)
			for _, s := range spans {
				if at.After(s[0].Add(openGrace)) && at.Before(s[1]) && !within(at, excluded) {
					violations++
					if violations <= 5 {
						var around []string
						for _, tr := range trs {
							if tr.dep == dep && tr.at.After(at.Add(-3*time.Second)) && tr.at.Before(at.Add(time.Second)) {
								around = append(around, fmt.Sprintf("r%d %v->%v at %s", tr.replica, tr.from, tr.to, tr.at.Format("15:04:05.000")))
							}
						}
						r.t.Logf("a call reached %s at %s, %v into an open span (%s to %s); transitions around it: %v", dep, at.Format("15:04:05.000"),
							at.Sub(s[0]).Round(time.Millisecond), s[0].Format("15:04:05.000"), s[1].Format("15:04:05.000"), around)
					}
					break
				}
			}
		}
	}
	return violations, intervals, transitions
}

func within(at time.Time, spans [][2]time.Time) bool {
	for _, s := range spans {
		if !at.Before(s[0]) && !at.After(s[1]) {
			return true
		}
	}
	return false
}

// growth fits a line to the second half's samples and returns the growth over it.
func (r *run) growth() (gGrowth, gMean, hGrowth, hMean float64) {
	r.mu.Lock()
	s := append([]sample(nil), r.samples...)
	r.mu.Unlock()
	s = s[len(s)/2:]
	if len(s) < 3 {
		return 0, 0, 0, 0
	}
	xs := make([]float64, len(s))
	gs := make([]float64, len(s))
	hs := make([]float64, len(s))
	for i, v := range s {
		xs[i], gs[i], hs[i] = v.at.Seconds(), float64(v.goroutines), float64(v.heap)
	}
	span := xs[len(xs)-1] - xs[0]
	gSlope, gMean := slope(xs, gs)
	hSlope, hMean := slope(xs, hs)
	return gSlope * span, gMean, hSlope * span, hMean
}

func slope(xs, ys []float64) (b, meanY float64) {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return 0, my
	}
	return num / den, my
}

// reservoir keeps a uniform sample of at most 4096 values, so a long soak's
// percentiles cost no growing memory.
type reservoir struct {
	mu  sync.Mutex
	rng *mrand.Rand
	n   int
	v   []float64
}

func newReservoir(seed int64) *reservoir {
	return &reservoir{rng: mrand.New(mrand.NewPCG(uint64(seed), 7))}
}

func (r *reservoir) add(x float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if len(r.v) < 4096 {
		r.v = append(r.v, x)
		return
	}
	if i := r.rng.IntN(r.n); i < len(r.v) {
		r.v[i] = x
	}
}

func (r *reservoir) quantile(q float64) float64 {
	r.mu.Lock()
	v := append([]float64(nil), r.v...)
	r.mu.Unlock()
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[min(len(v)-1, int(q*float64(len(v))))]
}
