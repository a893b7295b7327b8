package admission

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentbreaker/agentbreaker/redact"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/journal"
)

// EventKind names a queue event.
type EventKind string

// The queue events.
const (
	EventQueued       EventKind = "queued"
	EventReplayed     EventKind = "replayed"
	EventReplayFailed EventKind = "replay_failed"
	EventExpired      EventKind = "expired"
	EventHandedOver   EventKind = "handed_over"
	EventInterrupted  EventKind = "interrupted"
)

// Event reports what happened to one queued item.
type Event struct {
	Kind EventKind
	Item journal.QueueItem
	// Reason is the cause in words (for expired items: when they expired).
	Reason string
	// Err is the replay's error, for EventReplayFailed.
	Err error
	At  time.Time
}

func (c *Controller) emit(e Event) {
	for _, h := range c.cfg.OnEvent {
		h(e)
	}
	if l := c.cfg.Logger; l != nil {
		level := slog.LevelInfo
		if e.Kind != EventQueued && e.Kind != EventReplayed {
			level = slog.LevelWarn
		}
		attrs := []slog.Attr{slog.String("event", string(e.Kind)), slog.String("dependency", e.Item.Dependency),
			slog.String("tool", e.Item.Tool), slog.String("item", e.Item.ID), slog.Int("priority", e.Item.Priority),
			slog.String("reason", e.Reason)}
		if e.Err != nil {
			attrs = append(attrs, redact.ErrorAttr("error", e.Err))
		}
		l.LogAttrs(context.Background(), level, "agentbreaker admission", attrs...)
	}
}

// OnStateChange is a breaker listener: register it (dependencymap.Config.OnStateChange)
// so that a breaker closing wakes Run to drain that dependency's queue. It only takes
// note and returns at once.
func (c *Controller) OnStateChange(e breaker.Event) {
	if e.To != breaker.Closed && e.To != breaker.ForcedClosed {
		return
	}
	c.mu.Lock()
	c.wanted[e.Breaker] = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run drains queues as their breakers close, and at start-up and every
// Config.SweepEvery drops expired items and drains every queue whose dependency is
// available, until ctx ends. The start-up drain is what replays the work a restart
// would otherwise strand: a new process's breakers start closed, so no transition to
// closed ever wakes their queues. Run it on one goroutine per process; several
// processes sharing a PostgreSQL journal may each run it, as claims are atomic.
func (c *Controller) Run(ctx context.Context) error {
	tick, stop := c.cfg.NewTicker(c.cfg.SweepEvery)
	defer stop()
	c.sweepAndDrain(ctx)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			c.sweepAndDrain(ctx)
		case <-c.wake:
			c.mu.Lock()
			deps := make([]string, 0, len(c.wanted))
			for d := range c.wanted {
				deps = append(deps, d)
			}
			clear(c.wanted)
			c.mu.Unlock()
			for _, d := range deps {
				if _, err := c.Drain(ctx, d); err != nil && ctx.Err() == nil {
					c.logErr("drain "+d, err)
				}
			}
		}
	}
}

// sweepAndDrain drops expired items, then drains the queue of every dependency that
// has items waiting and whose breaker is closed (or that no breaker guards).
func (c *Controller) sweepAndDrain(ctx context.Context) {
	if _, err := c.Sweep(ctx); err != nil && ctx.Err() == nil {
		c.logErr("sweep", err)
	}
	deps, err := c.cfg.Journal.QueuedDependencies(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.logErr("listing queues", err)
		}
		return
	}
	for _, d := range deps {
		if b, ok := c.cfg.Map.Get(d); ok {
			if s := b.State(); s != breaker.Closed && s != breaker.ForcedClosed {
				continue // its breaker closing will wake Run
			}
		}
		if _, err := c.Drain(ctx, d); err != nil && ctx.Err() == nil {
			c.logErr("drain "+d, err)
		}
	}
}

func (c *Controller) logErr(what string, err error) {
	if l := c.cfg.Logger; l != nil {
		l.Error("agentbreaker admission: "+what+" failed", redact.ErrorAttr("error", err))
	}
}

// Sweep drops every expired item of every dependency and reports each one.
func (c *Controller) Sweep(ctx context.Context) ([]journal.QueueItem, error) {
	return c.expire(ctx, "")
}

func (c *Controller) expire(ctx context.Context, dependency string) ([]journal.QueueItem, error) {
	now := c.cfg.Clock.Now()
	items, err := c.cfg.Journal.ExpireQueued(ctx, dependency, now)
	for _, it := range items {
		c.emit(Event{Kind: EventExpired, Item: it, Reason: it.Reason, At: now})
	}
	return items, err
}

// DrainReport says what one Drain did.
type DrainReport struct {
	Replayed, Failed, HandedOver, Expired int
	// Stopped says why the drain ended early: the breaker was no longer closed.
	Stopped string
}

// Drain replays a dependency's waiting items, highest priority first and older first
// within a priority, at most Config.ReplayRate per second, while its breaker stays
// closed. Expired items are dropped and reported first. Each item is claimed in the
// journal (one commit) before it runs and its result recorded after (one more), so
// two replayers never run the same item and a replay costs two commits.
//
// An item whose idempotency key has an unsettled intent in the journal (an earlier
// attempt of the same operation whose outcome is unknown) is not replayed: replaying
// could apply it twice. It is handed over instead (Config.OnHandOver, and the event),
// with the reason.
func (c *Controller) Drain(ctx context.Context, dependency string) (DrainReport, error) {
	var rep DrainReport
	b, ok := c.cfg.Map.Get(dependency)
	interval := time.Duration(float64(time.Second) / c.cfg.ReplayRate)
	expired, err := c.expire(ctx, dependency)
	rep.Expired += len(expired)
	if err != nil {
		return rep, err
	}
	for first := true; ; first = false {
		if ok {
			if s := b.State(); s != breaker.Closed && s != breaker.ForcedClosed {
				rep.Stopped = "breaker is " + s.String()
				return rep, nil
			}
		}
		if !first {
			// A read, not a commit: no pause after the last item.
			next, err := c.cfg.Journal.Queued(ctx, dependency, 1, journal.QueueWaiting)
			if err != nil && !errors.Is(err, journal.ErrCorrupt) {
				return rep, err
			}
			if len(next) == 0 && err == nil {
				return rep, nil
			}
			if err := c.cfg.Sleeper.Sleep(ctx, interval); err != nil {
				return rep, err
			}
		}
		it, claimed, err := c.cfg.Journal.ClaimQueued(ctx, dependency, c.cfg.Clock.Now(), "replay started")
		if ce, isCorrupt := errors.AsType[*journal.CorruptError](err); isCorrupt {
			c.failCorrupt(ctx, ce, &rep)
			continue
		}
		if err != nil || !claimed {
			return rep, err
		}
		c.replay(ctx, it, &rep)
	}
}

// failCorrupt closes claimed items whose stored payload could not be opened: they
// cannot be replayed, and left as they are they would look interrupted.
func (c *Controller) failCorrupt(ctx context.Context, ce *journal.CorruptError, rep *DrainReport) {
	for _, r := range ce.Records {
		reason := "not replayed: stored item failed its checks: " + r.Problem
		if _, err := c.cfg.Journal.MoveQueued(ctx, r.ID, journal.QueueReplaying, journal.QueueFailed, reason); err != nil {
			c.logErr("closing corrupt item "+r.ID, err)
		}
		rep.Failed++
		c.emit(Event{Kind: EventReplayFailed, Item: journal.QueueItem{ID: r.ID, State: journal.QueueFailed, Reason: reason},
			Reason: reason, Err: ce, At: c.cfg.Clock.Now()})
	}
}

// replay runs one claimed item and records how it went.
func (c *Controller) replay(ctx context.Context, it journal.QueueItem, rep *DrainReport) {
	var (
		to     = journal.QueueReplayed
		kind   = EventReplayed
		reason = "replayed after " + it.Dependency + " recovered"
		rerr   error
	)
	held := ""
	if it.IdempotencyKey != "" && ReplayPolicy(it.ReplayPolicy) == ReplayAuto && c.cfg.Replay != nil {
		un, err := c.cfg.Journal.UnresolvedKey(ctx, it.IdempotencyKey)
		switch {
		case err != nil:
			held = "not replayed: the journal could not say whether an earlier attempt of it was applied"
		case len(un) > 0:
			held = "not replayed: an earlier attempt of it (intent " + un[0].ID + ") has an unknown outcome; settle it first"
		}
	}
	switch {
	case held != "":
		to, kind, reason = journal.QueueHandedOver, EventHandedOver, held
		if h := c.cfg.OnHandOver; h != nil {
			h(it)
		}
		rep.HandedOver++
	case ReplayPolicy(it.ReplayPolicy) == ReplayHandOver || c.cfg.Replay == nil:
		to, kind, reason = journal.QueueHandedOver, EventHandedOver, "handed to the application after "+it.Dependency+" recovered"
		if h := c.cfg.OnHandOver; h != nil {
			h(it)
		}
		rep.HandedOver++
	default:
		if rerr = c.cfg.Replay(ctx, it); rerr != nil {
			to, kind, reason = journal.QueueFailed, EventReplayFailed, "replay failed: "+redact.Summary(rerr.Error())
			rep.Failed++
		} else {
			rep.Replayed++
		}
	}
	// Record the result even if ctx ended during the replay: it happened.
	if _, err := c.cfg.Journal.MoveQueued(context.WithoutCancel(ctx), it.ID, journal.QueueReplaying, to, reason); err != nil {
		c.logErr("recording replay of "+it.ID, err)
	}
	it.State, it.Reason = to, reason
	c.emit(Event{Kind: kind, Item: it, Reason: reason, Err: rerr, At: c.cfg.Clock.Now()})
}

// RecoverInterrupted reports the items a replayer claimed and never finished (it
// crashed) longer than olderThan ago, and marks them interrupted: whether they ran is
// unknown, so they are not run again automatically. Call it at start-up; with a shared
// PostgreSQL journal, give olderThan a margin over the longest replay.
func (c *Controller) RecoverInterrupted(ctx context.Context, olderThan time.Duration) ([]journal.QueueItem, error) {
	stuck, err := c.cfg.Journal.Queued(ctx, "", 0, journal.QueueReplaying)
	if ce, ok := errors.AsType[*journal.CorruptError](err); ok {
		c.logErr("reading interrupted replays (the healthy ones are recovered)", ce)
		err = nil
	}
	if err != nil {
		return nil, err
	}
	now := c.cfg.Clock.Now()
	var out []journal.QueueItem
	for _, it := range stuck {
		if now.Sub(it.UpdatedAt) < olderThan {
			continue
		}
		reason := "replay was under way when its replayer stopped; whether it ran is unknown"
		ok, err := c.cfg.Journal.MoveQueued(ctx, it.ID, journal.QueueReplaying, journal.QueueInterrupted, reason)
		if err != nil {
			return out, err
		}
		if ok {
			it.State, it.Reason = journal.QueueInterrupted, reason
			out = append(out, it)
			c.emit(Event{Kind: EventInterrupted, Item: it, Reason: reason, At: now})
		}
	}
	return out, nil
}
