package sim

import (
	"container/heap"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

// engine is a discrete-event loop in virtual time. Events run in order of time, then of
// scheduling, so a run is a pure function of its inputs. Before each event the fake
// clock is set to the event's time: the breaker, bulkhead, callbacks and retry code all
// read that clock.
type engine struct {
	clk *clock.Fake
	now time.Time
	q   events
	seq uint64
}

type event struct {
	at  time.Time
	seq uint64
	fn  func()
}

type events []event

func (q events) Len() int { return len(q) }
func (q events) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q events) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *events) Push(x any)   { *q = append(*q, x.(event)) }
func (q *events) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = event{}
	*q = old[:len(old)-1]
	return e
}

func newEngine(start time.Time) *engine {
	return &engine{clk: clock.NewFake(start), now: start}
}

// at schedules fn at t (never before now).
func (e *engine) at(t time.Time, fn func()) {
	if t.Before(e.now) {
		t = e.now
	}
	e.seq++
	heap.Push(&e.q, event{at: t, seq: e.seq, fn: fn})
}

// after schedules fn d after now.
func (e *engine) after(d time.Duration, fn func()) { e.at(e.now.Add(d), fn) }

// run runs events until the queue is empty or the next one is after until. progress, if
// set, is told the virtual time reached now and then.
func (e *engine) run(until time.Time, progress func(time.Time)) {
	n := 0
	for e.q.Len() > 0 {
		next := e.q[0]
		if next.at.After(until) {
			break
		}
		heap.Pop(&e.q)
		e.now = next.at
		e.clk.Set(next.at)
		next.fn()
		n++
		if progress != nil && n%4096 == 0 {
			progress(e.now)
		}
	}
	if e.now.Before(until) {
		e.now = until
		e.clk.Set(until)
	}
}
