package metrics

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/attach"
	"github.com/agentbreaker/agentbreaker/internal/nilness"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/redact"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// Parts is what an application built, for the exporters' Wire: each part set is
// exported with every family it has, each nil part exports nothing. Both exporters'
// Parts is this type.
type Parts struct {
	// Dependencies is the dependency map: its breakers, their transitions (no
	// dependencymap.Config.OnStateChange needed), and its throttles and adaptive
	// limits, all read at every collection, so keys the map adds later report too.
	Dependencies *dependencymap.Map
	// Failover is the model failover wrapper: its failovers and fallback calls are
	// counted (no modelfailover.Config.Observer needed) and its serving route and
	// fallback share read at every collection.
	Failover *modelfailover.Failover
	// Fleet is fleet mode (a *fleet.Fleet), read at every collection. A nil
	// *fleet.Fleet, as a program holds while fleet mode is off, is no fleet.
	Fleet FleetSource
	// Journal is the dispatch-intent journal (a *journal.Journal): its backlog is
	// read at every collection, within JournalTimeout, instead of by a goroutine.
	// A nil *journal.Journal is no journal.
	Journal interface {
		Backlog(ctx context.Context) (n int, oldest time.Time, err error)
	}
	// Retrier is the retry orchestrator: operations its budget stopped are counted
	// (no hook in retry.Config.OnAttempt needed).
	Retrier *retry.Retrier
	// Tools are the agent's tools: each that is, or wraps (through Unwrap), a
	// *tooltimeout.Tool reports the calls it abandons (no tooltimeout.Config.OnAbandon
	// needed). A tool whose OnAbandon is set keeps its own hook.
	Tools []tool.Tool
}

// JournalTimeout bounds the reading of a wired journal's backlog at a collection; a
// reading that fails or takes longer leaves the gauges at their last value.
const JournalTimeout = time.Second

// wiring is what Wire attached, so that wiring again, or wiring beside the listeners
// and hooks a user gave by hand, counts every event once. Guarded by its mu.
type wiring struct {
	wired   atomic.Bool // a part was wired: the user's paths record what they deliver
	mu      sync.Mutex
	done    map[any]bool             // parts already wired
	heard   map[string]breaker.Event // per breaker, the latest event a user's listener delivered
	recent  [64]any                  // the latest exhaustions and model reports a user's hook or observer delivered
	next    int
	models  *wiredModels
	journal interface {
		Backlog(ctx context.Context) (n int, oldest time.Time, err error)
	}
	journalFailing bool // the last reading failed: the next failure is not logged again
}

// Wire attaches every part set in p: onBreaker receives the map's transitions (the
// exporter's BreakerEvent, less its Heard), onBudget the operations the retrier's
// budget stopped. A part wired before is skipped.
func (s *State) Wire(p Parts, onBreaker func(breaker.Event), onBudget func(context.Context, string), onAbandon func(context.Context, tooltimeout.Abandon)) {
	if s == nil {
		return
	}
	first := func(part any) bool {
		s.wire.mu.Lock()
		defer s.wire.mu.Unlock()
		if s.wire.done == nil {
			s.wire.done = map[any]bool{}
		}
		s.wire.wired.Store(true)
		if !reflect.ValueOf(part).Comparable() {
			return true // a user's journal type that cannot key a map: no memory of it
		}
		if s.wire.done[part] {
			return false
		}
		s.wire.done[part] = true
		return true
	}
	if m := p.Dependencies; m != nil && first(m) {
		s.Watch(m)
		s.WatchThrottles(m)
		s.WatchLimits(m)
		attach.Add(m, func(e breaker.Event) {
			if !s.heardBefore(e) {
				onBreaker(e)
			}
		})
	}
	if f := p.Failover; f != nil && first(f) {
		o := s.ModelObserver()
		o.Watch(f)
		s.wire.mu.Lock()
		if s.wire.models == nil {
			s.wire.models = &wiredModels{o}
		}
		w := s.wire.models
		s.wire.mu.Unlock()
		attach.Add[*modelfailover.Failover, modelfailover.Observer](f, w) // declines a second time
	}
	for _, t := range p.Tools {
		if tt := timeoutTool(t); tt != nil && first(tt) {
			attach.Add(tt, onAbandon) // declined when the tool has its own OnAbandon
		}
	}
	if p.Failover != nil && p.Dependencies != nil {
		s.warnForeignRoutes(p.Failover, p.Dependencies)
	}
	if !nilness.Absent(p.Fleet) {
		s.WatchFleet(p.Fleet)
	}
	if !nilness.Absent(p.Journal) && first(p.Journal) {
		s.wire.mu.Lock()
		s.wire.journal = p.Journal
		s.wire.mu.Unlock()
	}
	if r := p.Retrier; r != nil && first(r) {
		attach.Add(r, func(ctx context.Context, e retry.Event) {
			if budgetStopped(e) && !s.retryHeardBefore(ctx, e) {
				onBudget(ctx, e.Dependency)
			}
		})
	}
}

// timeoutTool finds the *tooltimeout.Tool that t is or wraps, through Unwrap (as an
// idempotency-key wrapper has), or nil.
func timeoutTool(t tool.Tool) *tooltimeout.Tool {
	for range 8 {
		switch v := t.(type) {
		case *tooltimeout.Tool:
			return v
		case interface{ Unwrap() tool.Tool }:
			t = v.Unwrap()
		default:
			return nil
		}
	}
	return nil
}

// warnForeignRoutes logs one warning for each route of f whose breaker is not m's:
// the failover was built without modelfailover.Config.Breakers set to the wired map,
// so its routes' breakers live in a map of their own, which the breaker rows and the
// admin page never see. Nothing else can tell the user: every call still works.
func (s *State) warnForeignRoutes(f *modelfailover.Failover, m *dependencymap.Map) {
	for _, r := range f.Routes() {
		if b, ok := m.Get(r.Breaker.Name()); ok && b == r.Breaker {
			continue
		}
		s.log.Warn("agentbreaker: a model route's breaker is not in the wired dependency map: "+
			"set modelfailover.Config.Breakers to that map, or its breaker has no breaker_* rows and no place on the admin page",
			"route", r.Name)
	}
}

// Heard records a transition a user's listener delivered, when a map is wired: the
// wired listener, called next for the same event, then skips it. A breaker delivers
// its events one at a time, to its listeners in order, so the two are adjacent.
func (s *State) Heard(e breaker.Event) {
	if s == nil || !s.wire.wired.Load() {
		return
	}
	s.wire.mu.Lock()
	defer s.wire.mu.Unlock()
	if s.wire.done == nil {
		return // nothing wired: nothing to skip
	}
	if s.wire.heard == nil || len(s.wire.heard) >= 4096 {
		s.wire.heard = map[string]breaker.Event{}
	}
	s.wire.heard[e.Breaker] = e
}

func (s *State) heardBefore(e breaker.Event) bool {
	s.wire.mu.Lock()
	defer s.wire.mu.Unlock()
	h, ok := s.wire.heard[e.Breaker]
	if !ok || !sameEvent(h, e) {
		return false
	}
	delete(s.wire.heard, e.Breaker)
	return true
}

func sameEvent(a, b breaker.Event) bool {
	return a.Generation == b.Generation && a.From == b.From && a.To == b.To && a.Cause == b.Cause &&
		a.At.Equal(b.At) && a.ReopenAt.Equal(b.ReopenAt) && a.Reason == b.Reason
}

// retryKey tells one budget exhaustion from another.
type retryKey struct {
	ctx                       any // the hooks' context, when comparable
	dependency, tool, request string
	intent                    string
	attempt                   int
	at                        time.Time
}

func newRetryKey(ctx context.Context, e retry.Event) retryKey {
	return retryKey{ctx: ctxKey(ctx), dependency: e.Dependency, tool: e.Tool, request: e.RequestID, intent: e.IntentID, attempt: e.Attempt, at: e.At}
}

func budgetStopped(e retry.Event) bool { return e.Stop == retry.ReasonBudgetExhausted && !e.Retry }

// HeardRetry records a budget exhaustion a user's hook (RetryHook) reported, when a
// retrier is wired: the wired hook, called after the user's for the same event, then
// skips it.
func (s *State) HeardRetry(ctx context.Context, e retry.Event) {
	if s == nil || !budgetStopped(e) || !s.wire.wired.Load() {
		return
	}
	s.wire.mu.Lock()
	defer s.wire.mu.Unlock()
	if s.wire.done == nil {
		return
	}
	s.wire.hearLocked(newRetryKey(ctx, e))
}

func (s *State) retryHeardBefore(ctx context.Context, e retry.Event) bool {
	return s.wire.heardOnce(newRetryKey(ctx, e))
}

// hearLocked remembers k, a comparable key, among the latest reports. It needs mu.
func (w *wiring) hearLocked(k any) {
	w.recent[w.next] = k
	w.next = (w.next + 1) % len(w.recent)
}

// hear remembers k when something is wired.
func (w *wiring) hear(k any) {
	if !w.wired.Load() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil {
		w.hearLocked(k)
	}
}

// heardOnce reports whether k was heard, and forgets it: the wired path calls it for
// the report a user's path delivered just before.
func (w *wiring) heardOnce(k any) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.recent {
		if w.recent[i] == k {
			w.recent[i] = nil
			return true
		}
	}
	return false
}

// ctxKey is ctx when it can be compared, so that two reports of one call match and
// two calls' reports do not; nil otherwise.
func ctxKey(ctx context.Context) any {
	if ctx != nil && reflect.ValueOf(ctx).Comparable() {
		return ctx
	}
	return nil
}

type (
	callKey struct {
		ctx any
		c   modelfailover.Call
	}
	failoverKey struct {
		ctx any
		e   modelfailover.Event
	}
)

// wiredModels is the observer Wire gives a Failover: the state's ModelObserver, less
// the reports a user's Config.Observer (the same ModelObserver, or one that fans out
// to it) already delivered.
type wiredModels struct{ o *ModelObserver }

func (w *wiredModels) ObserveCall(ctx context.Context, c modelfailover.Call) {
	if !w.o.s.wire.heardOnce(callKey{ctxKey(ctx), c}) {
		w.o.observeCall(ctx, c)
	}
}

func (w *wiredModels) ObserveFailover(ctx context.Context, e modelfailover.Event) {
	if !w.o.s.wire.heardOnce(failoverKey{ctxKey(ctx), e}) {
		w.o.observeFailover(ctx, e)
	}
}

// pollJournal reads a wired journal's backlog into the journal gauges.
func (s *State) pollJournal() {
	s.wire.mu.Lock()
	j := s.wire.journal
	s.wire.mu.Unlock()
	if j == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), JournalTimeout)
	defer cancel()
	n, oldest, err := j.Backlog(ctx)
	s.wire.mu.Lock()
	failing := s.wire.journalFailing
	s.wire.journalFailing = err != nil
	s.wire.mu.Unlock()
	if err != nil {
		if !failing { // once per spell of failures, not at every scrape
			s.log.Warn("agentbreaker: reading the journal backlog failed; the gauges keep their last value", redact.ErrorAttr("error", err))
		}
		return
	}
	s.JournalPending(n, oldest)
}
