package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentbreaker/agentbreaker/redact"

	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// RetryHook returns a hook for retry.Config.OnAttempt that reports to calls every
// logical operation the retry budget stopped (reason retry_budget_exhausted): once per
// operation, with the attempt's context so the decision lands on its span. Other
// records are left to the retry package's own Logger. calls is usually a *Telemetry;
// nil gives a hook that does nothing. The hook is safe for concurrent use when calls
// is.
func RetryHook(calls observe.Calls) func(context.Context, retry.Event) {
	if calls == nil {
		return func(context.Context, retry.Event) {}
	}
	return func(ctx context.Context, e retry.Event) {
		if e.Stop == retry.ReasonBudgetExhausted && !e.Retry {
			if t, ok := calls.(*Telemetry); ok {
				t.state().HeardRetry(ctx, e) // so that a Wire of the same retrier does not count it again
			}
			calls.RetryBudgetExhausted(ctx, e.Dependency)
		}
	}
}

// Backlogger is what JournalWatch reads: the journal's count of intents awaiting
// reconciliation and the time the oldest was written. *journal.Journal has it.
type Backlogger interface {
	Backlog(ctx context.Context) (n int, oldest time.Time, err error)
}

var _ Backlogger = (*journal.Journal)(nil)

// defaultJournalEvery is how often WatchJournal reads the backlog by default.
const defaultJournalEvery = 15 * time.Second

// JournalWatch configures WatchJournal.
type JournalWatch struct {
	// Journal is read. Required.
	Journal Backlogger
	// Observer receives each reading (a *Telemetry's JournalPending exports it as the
	// journal gauges). Required.
	Observer observe.Journal
	// Every is the time between readings. From 1s to 1h. Defaults to
	// 15s.
	Every time.Duration
	// Tick, when set, replaces the ticker: each value received triggers a reading, and
	// Every is not used. Tests send on it. Defaults to a time.Ticker of Every.
	Tick <-chan time.Time
	// Logger receives failed readings. Defaults to discarding them.
	Logger *slog.Logger
}

// PollJournal reads the journal's backlog once and hands it to o.
func PollJournal(ctx context.Context, j Backlogger, o observe.Journal) error {
	n, oldest, err := j.Backlog(ctx)
	if err != nil {
		return err
	}
	o.JournalPending(n, oldest)
	return nil
}

// WatchJournal reads the journal's backlog now and then at every tick, handing each
// reading to the Observer, until ctx ends (it then returns nil) or the journal is
// closed (it returns journal.ErrClosed). A failed reading is logged and the gauges keep
// their last value. A bad JournalWatch returns an error naming the field at once. Run
// it on a goroutine of its own:
//
//	go telemetry.WatchJournal(ctx, telemetry.JournalWatch{Journal: j, Observer: tel})
func WatchJournal(ctx context.Context, w JournalWatch) error {
	switch {
	case w.Journal == nil:
		return errors.New("telemetry: JournalWatch.Journal = nil: required")
	case w.Observer == nil:
		return errors.New("telemetry: JournalWatch.Observer = nil: required")
	}
	if w.Tick == nil {
		if w.Every == 0 {
			w.Every = defaultJournalEvery
		}
		if w.Every < time.Second || w.Every > time.Hour {
			return fmt.Errorf("telemetry: JournalWatch.Every = %s: must be between 1s and 1h", w.Every)
		}
		t := time.NewTicker(w.Every)
		defer t.Stop()
		w.Tick = t.C
	}
	log := w.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for {
		if err := PollJournal(ctx, w.Journal, w.Observer); err != nil {
			switch {
			case errors.Is(err, journal.ErrClosed):
				return err
			case ctx.Err() != nil:
				return nil
			}
			log.Warn("agentbreaker: reading the journal backlog failed; the gauges keep their last value", redact.ErrorAttr("error", err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.Tick:
		}
	}
}
