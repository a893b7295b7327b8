package admission

import (
	"context"
	"log/slog"
	"time"

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
			attrs = append(attrs, slog.String("error", e.Err.Error()))
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

// Run drains queues as their breakers close and drops expired items every
// Config.SweepEvery, until ctx ends. Run it on one goroutine per process; several
// processes sharing a PostgreSQL journal may each run it, as claims are atomic.
func (c *Controller) Run(ctx context.Context) error {
	tick, stop := c.cfg.NewTicker(c.cfg.SweepEvery)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			if _, err := c.Sweep(ctx); err != nil && ctx.Err() == nil {
				c.logErr("sweep", err)
			}
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

func (c *Controller) logErr(what string, err error) {
	if l := c.cfg.Logger; l != nil {
		l.Error("agentbreaker admission: "+what+" failed", slog.String("error", err.Error()))
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
// closed. Expired items are dropped and reported first. Items are claimed in the
// journal before they run, so two replayers never run the same item.
func (c *Controller) Drain(ctx context.Context, dependency string) (DrainReport, error) {
	var rep DrainReport
	b, ok := c.cfg.Map.Get(dependency)
	interval := time.Duration(float64(time.Second) / c.cfg.ReplayRate)
	for first := true; ; first = false {
		if ok {
			if s := b.State(); s != breaker.Closed && s != breaker.ForcedClosed {
				rep.Stopped = "breaker is " + s.String()
				return rep, nil
			}
		}
		expired, err := c.expire(ctx, dependency)
		rep.Expired += len(expired)
		if err != nil {
			return rep, err
		}
		next, err := c.cfg.Journal.Queued(ctx, dependency, 1, journal.QueueWaiting)
		if err != nil || len(next) == 0 {
			return rep, err
		}
		if !first {
			if err := c.cfg.Sleeper.Sleep(ctx, interval); err != nil {
				return rep, err
			}
		}
		it := next[0]
		claimed, err := c.cfg.Journal.MoveQueued(ctx, it.ID, journal.QueueWaiting, journal.QueueReplaying, "replay started")
		if err != nil {
			return rep, err
		}
		if !claimed {
			continue // another replayer took it, or it expired meanwhile
		}
		c.replay(ctx, it, &rep)
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
	switch {
	case ReplayPolicy(it.ReplayPolicy) == ReplayHandOver || c.cfg.Replay == nil:
		to, kind, reason = journal.QueueHandedOver, EventHandedOver, "handed to the application after "+it.Dependency+" recovered"
		if h := c.cfg.OnHandOver; h != nil {
			h(it)
		}
		rep.HandedOver++
	default:
		if rerr = c.cfg.Replay(ctx, it); rerr != nil {
			to, kind, reason = journal.QueueFailed, EventReplayFailed, "replay failed: "+rerr.Error()
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
