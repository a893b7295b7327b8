package sim

import (
	"container/heap"
	"fmt"
	"io"
	"runtime"
	"sort"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
)

// shard replays records through its share of the candidates, on a goroutine of its
// own: the candidates whose index (the base policy's is 0) is w modulo the workers.
type shard struct {
	in   chan []tuneRecord
	done chan struct{}
	deps []*shardDep
}

// shardDep is one dependency's breakers in a shard.
type shardDep struct {
	outages  []Period
	bounds   []time.Time // segment i ends at bounds[i]
	seg      int         // the segment of the latest record
	cands    []*Candidate
	breakers []*breaker.Breaker
	clk      *clock.Fake
	// grace widens each outage for its trips: a trip a bin before it or after it is
	// on its failures, not false (Replay: none before, 10 s after).
	grace   time.Duration
	pending pendingCalls
	seq     uint64
	free    [][]breaker.Permit
}

// pendingCall is a call whose outcome the shard's breakers wait for.
type pendingCall struct {
	end     time.Time
	seq     uint64 // the order of the calls' starts, for calls that end together
	report  breaker.Report
	permits []breaker.Permit // one per breaker; invalid where it refused
}

type pendingCalls []pendingCall

func (q pendingCalls) Len() int { return len(q) }
func (q pendingCalls) Less(i, j int) bool {
	if !q[i].end.Equal(q[j].end) {
		return q[i].end.Before(q[j].end)
	}
	return q[i].seq < q[j].seq
}
func (q pendingCalls) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *pendingCalls) Push(x any)   { *q = append(*q, x.(pendingCall)) }
func (q *pendingCalls) Pop() any {
	old := *q
	c := old[len(old)-1]
	*q = old[:len(old)-1]
	return c
}

func newShard(deps []*DependencyTune, w, workers int) (*shard, error) {
	sh := &shard{in: make(chan []tuneRecord, 4), done: make(chan struct{})}
	for _, dt := range deps {
		sd := &shardDep{outages: dt.Outages, clk: clock.NewFake(dt.from), grace: dt.bin}
		for i := 1; i < len(dt.Outages); i++ {
			prev, next := dt.Outages[i-1].End, dt.Outages[i].Start
			sd.bounds = append(sd.bounds, prev.Add(next.Sub(prev)/2))
		}
		for j, c := range append([]*Candidate{dt.Base}, dt.Candidates...) {
			if j%workers != w {
				continue
			}
			b, err := breaker.New(breaker.Config{Name: dt.Dependency, Policy: c.policy, Clock: sd.clk,
				OnStateChange: []func(breaker.Event){sd.onTrip(c)}})
			if err != nil {
				return nil, err
			}
			sd.cands, sd.breakers = append(sd.cands, c), append(sd.breakers, b)
		}
		sh.deps = append(sh.deps, sd)
	}
	return sh, nil
}

// segment returns the segment that holds t.
func (sd *shardDep) segment(t time.Time) int {
	return sort.Search(len(sd.bounds), func(i int) bool { return t.Before(sd.bounds[i]) })
}

// onTrip counts c's trips: the first in an outage (or just after its last failures)
// as its trip, any other outside an outage as false.
func (sd *shardDep) onTrip(c *Candidate) func(breaker.Event) {
	return func(ev breaker.Event) {
		if ev.To != breaker.Open || ev.From != breaker.Closed {
			return
		}
		c.trips = append(c.trips, ev.At)
		k := sd.segment(ev.At)
		o, seg := sd.outages[k], &c.Segments[k]
		if (Period{Start: o.Start.Add(-sd.grace), End: o.End.Add(max(sd.grace, BinWidth))}).contains(ev.At) {
			if seg.TripAfterOnset == nil {
				v := ms(ev.At.Sub(o.Start))
				seg.TripAfterOnset = &v
			}
			return
		}
		seg.FalseTrips++
	}
}

func (sh *shard) start() {
	go func() {
		defer close(sh.done)
		for batch := range sh.in {
			for _, r := range batch {
				sh.deps[r.dep].call(r.Record)
			}
		}
		for _, sd := range sh.deps {
			sd.settle(time.Time{}, true)
		}
	}()
}

// settle reports the outcomes of the calls that ended before t (all of them when
// all): a call that starts as another ends is asked about first.
func (sd *shardDep) settle(t time.Time, all bool) {
	for sd.pending.Len() > 0 && (all || sd.pending[0].end.Before(t)) {
		pc := heap.Pop(&sd.pending).(pendingCall)
		sd.clk.Set(maxTime(sd.clk.Now(), pc.end))
		for j := range pc.permits {
			pc.permits[j].ReportAt(pc.end, pc.report)
		}
		sd.free = append(sd.free, pc.permits)
	}
}

// call asks every breaker for a permit at r's start, after the outcomes of the calls
// that ended before it.
func (sd *shardDep) call(r Record) {
	start := r.Start()
	sd.settle(start, false)
	sd.clk.Set(maxTime(sd.clk.Now(), start))
	for sd.seg < len(sd.bounds) && !start.Before(sd.bounds[sd.seg]) {
		sd.seg++
	}
	down := sd.outages[sd.seg].contains(start)
	var permits []breaker.Permit
	if n := len(sd.free); n > 0 {
		permits, sd.free = sd.free[n-1], sd.free[:n-1]
	} else {
		permits = make([]breaker.Permit, len(sd.breakers))
	}
	sent := false
	for j, b := range sd.breakers {
		p, err := b.AllowAt(start)
		permits[j] = p
		seg := &sd.cands[j].Segments[sd.seg]
		switch {
		case err != nil && down:
			seg.Saved++
		case err != nil:
			seg.HealthyRefused++
		case down:
			seg.DeadSent++
			sent = true
		default:
			sent = true
		}
	}
	if !sent {
		sd.free = append(sd.free, permits)
		return
	}
	sd.seq++
	heap.Push(&sd.pending, pendingCall{end: r.End, seq: sd.seq, report: reportOf(r), permits: permits})
}

func reportOf(r Record) breaker.Report {
	switch r.Verdict {
	case classify.Healthy:
		return breaker.Report{Verdict: breaker.Success}
	case classify.Counts:
		return breaker.Report{Verdict: breaker.Failure, RetryAfter: r.RetryAfter}
	}
	return breaker.Report{Verdict: breaker.Ignore}
}

// tuneReplay is the second pass: records in order of start through every candidate's
// breaker, the candidates shared out among workers.
func tuneReplay(open func() (io.ReadCloser, error), src int, stats map[string]*depStats, deps []*DependencyTune, cfg TuneConfig) error {
	policies := append([]breaker.Policy{cfg.Base}, cfg.Grid.Policies(cfg.Base)...)
	workers := max(1, min(cmp0(cfg.Workers, runtime.GOMAXPROCS(0)), len(policies)))
	index := map[string]int{}
	var lag time.Duration
	for i, dt := range deps {
		index[dt.Dependency] = i
		lag = max(lag, stats[dt.Dependency].maxElapsed)
		for _, p := range policies {
			c := &Candidate{Policy: policyInfo(simPolicy(p)), policy: simPolicy(p), Segments: make([]Segment, len(dt.Outages))}
			if cfg.Allowed != nil && dt.Base != nil {
				if err := cfg.Allowed(p); err != nil {
					c.Refused = err.Error()
				}
			}
			if dt.Base == nil {
				dt.Base = c
			} else {
				dt.Candidates = append(dt.Candidates, c)
			}
		}
	}
	shards := make([]*shard, workers)
	for w := range shards {
		sh, err := newShard(deps, w, workers)
		if err != nil {
			return err
		}
		shards[w] = sh
	}
	err := streamInOrder(open, src, lag, index, func(r Record, dep int) {
		dt := deps[dep]
		if !inAny(dt.Outages, r.Start()) && r.Verdict == classify.Healthy {
			stats[dt.Dependency].latency.add(r.Elapsed)
		}
	}, shards)
	for _, dt := range deps {
		for _, c := range append([]*Candidate{dt.Base}, dt.Candidates...) {
			c.Total = c.without(-1)
		}
	}
	return err
}

func cmp0(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

func inAny(ps []Period, t time.Time) bool {
	i := sort.Search(len(ps), func(i int) bool { return ps[i].End.After(t) })
	return i < len(ps) && ps[i].contains(t)
}

// byStart orders the records waiting to be replayed.
type byStart []tuneRecord

type tuneRecord struct {
	Record
	dep int
}

func (q byStart) Len() int           { return len(q) }
func (q byStart) Less(i, j int) bool { return q[i].Start().Before(q[j].Start()) }
func (q byStart) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *byStart) Push(x any)        { *q = append(*q, x.(tuneRecord)) }
func (q *byStart) Pop() any {
	old := *q
	r := old[len(old)-1]
	*q = old[:len(old)-1]
	return r
}

// logJitter is how far out of the order of their ends the records of a log may be
// (goroutines that log at once), which streamInOrder waits for.
const logJitter = time.Second

// batchSize is how many records go to the workers at once.
const batchSize = 4096

// streamInOrder reads the records of source src and of the dependencies in index, and
// hands them to every shard in order of start, in batches. Records arrive in about the
// order they ended, so one that started more than lag (the longest call) before the
// latest end can be released: no later record starts before it. each sees every
// record first, in the same order.
func streamInOrder(open func() (io.ReadCloser, error), src int, lag time.Duration, index map[string]int,
	each func(Record, int), shards []*shard) error {
	for _, sh := range shards {
		sh.start()
	}
	var q byStart
	var latest, released time.Time
	batch := make([]tuneRecord, 0, batchSize)
	release := func(r tuneRecord) {
		released = r.Start()
		each(r.Record, r.dep)
		if batch = append(batch, r); len(batch) == batchSize {
			for _, sh := range shards {
				sh.in <- batch
			}
			batch = make([]tuneRecord, 0, batchSize)
		}
	}
	err := scanFile(open, func(r Record, s int) error {
		dep, ok := index[r.Dependency]
		if s != src || !ok {
			return nil
		}
		if r.Start().Before(released) {
			return outOfOrder(r, released)
		}
		heap.Push(&q, tuneRecord{r, dep})
		latest = maxTime(latest, r.End)
		for q.Len() > 0 && q[0].Start().Before(latest.Add(-lag-logJitter)) {
			release(heap.Pop(&q).(tuneRecord))
		}
		return nil
	})
	for q.Len() > 0 {
		release(heap.Pop(&q).(tuneRecord))
	}
	for _, sh := range shards {
		sh.in <- batch
		close(sh.in)
	}
	for _, sh := range shards {
		<-sh.done
	}
	return err
}

// outOfOrder is the error for record r, read after a call that started at after was
// taken: tune streams, so it needs the records about in the order they were logged.
func outOfOrder(r Record, after time.Time) error {
	return fmt.Errorf("sim: records out of order: a call to %s that started at %s comes after a call that started at %s; "+
		"tune reads the records in the order they were logged, by end: sort the file by time",
		r.Dependency, r.Start().Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
}
