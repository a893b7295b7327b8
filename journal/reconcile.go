package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/redact"

	"github.com/agentbreaker/agentbreaker/journal/internal/store"
)

// Status is what a dependency says about one call.
type Status uint8

const (
	// StatusUnknown: the dependency cannot tell (or was not asked).
	StatusUnknown Status = iota
	// StatusApplied: the dependency applied the call.
	StatusApplied
	// StatusNotApplied: the dependency never applied it; it may be sent again.
	StatusNotApplied
)

func (s Status) String() string {
	switch s {
	case StatusApplied:
		return "applied"
	case StatusNotApplied:
		return "not_applied"
	}
	return "unknown"
}

// StatusLookup asks a dependency whether the call behind an intent was applied,
// typically by its idempotency key. It is called without locks held and may do I/O. An
// error counts as StatusUnknown.
type StatusLookup func(ctx context.Context, in Intent) (Status, error)

// Report says what Reconcile did.
type Report struct {
	// Applied and NotApplied were settled by a status lookup.
	Applied, NotApplied []Intent
	// Awaiting are left for an operator (no lookup, or it could not tell).
	Awaiting []Intent
	// Skipped are open intents left alone, each with why: its call is still in
	// flight in this process, or in another process that is alive.
	Skipped []Skip
	// Corrupt are stored rows that failed their checks; Reconcile went on with the
	// rest. Each needs an operator (see CorruptError).
	Corrupt []BadRecord
}

// Skip is one open intent Reconcile left alone.
type Skip struct {
	Intent Intent
	// Why says why, for example "its process is alive (owner ...)".
	Why string
}

// Reconcile settles the intents left without a final outcome: those a crash left
// open and those whose outcome was UNKNOWN (and, again, those awaiting an operator, in
// case the dependency can tell by now). Each is settled by its dependency's status
// lookup; what cannot be settled waits for an operator (see Pending). Run it after a
// restart, and periodically.
//
// An open intent is settled only when the process that wrote it is gone: every
// journal holds an owner lease (on PostgreSQL a session advisory lock, which the
// server releases when the process's connection ends, as it does at once when the
// process is killed), so the intents of a dead process are settled on the first run
// after its death, and those of a live one are listed in Report.Skipped. Rows that
// fail their checks are listed in Report.Corrupt and do not stop the rest.
func (j *Journal) Reconcile(ctx context.Context) (Report, error) {
	var rep Report
	list, err := j.Intents(ctx, Filter{States: unsettled})
	if ce, ok := errors.AsType[*CorruptError](err); ok {
		rep.Corrupt, err = ce.Records, nil
	}
	if err != nil {
		return rep, err
	}
	live, err := j.liveOwners(ctx, list)
	if err != nil {
		return rep, err
	}
	now, _ := j.micros()
	for _, in := range list {
		if in.State == StateOpen {
			if why := j.inFlightWhy(in, live, now); why != "" {
				rep.Skipped = append(rep.Skipped, Skip{Intent: in, Why: why})
				continue
			}
		}
		settled, err := j.settle(ctx, in)
		if err != nil {
			if errors.Is(err, ErrState) {
				continue // someone else settled it meanwhile
			}
			return rep, err
		}
		switch settled.State {
		case StateApplied:
			rep.Applied = append(rep.Applied, settled)
		case StateNotApplied:
			rep.NotApplied = append(rep.NotApplied, settled)
		default:
			rep.Awaiting = append(rep.Awaiting, settled)
		}
	}
	return rep, nil
}

// liveOwners asks the backend which owners of the open intents in list hold their
// lease. nil means the backend cannot tell.
func (j *Journal) liveOwners(ctx context.Context, list []Intent) (map[string]bool, error) {
	seen := map[string]bool{}
	var owners []string
	for _, in := range list {
		if in.State == StateOpen && in.Owner != j.owner && !seen[in.Owner] {
			seen[in.Owner] = true
			owners = append(owners, in.Owner)
		}
	}
	if len(owners) == 0 {
		return map[string]bool{}, nil
	}
	live, known, err := j.store.Live(ctx, owners)
	if err != nil {
		return nil, fmt.Errorf("journal: checking owner leases: %w", err)
	}
	if !known {
		return nil, nil
	}
	return live, nil
}

// inFlightWhy says why the open intent in may still be in flight, or "" when it is
// not: its process is gone, or this process is not waiting for it.
func (j *Journal) inFlightWhy(in Intent, live map[string]bool, now time.Time) string {
	if in.Owner == j.owner {
		j.flightMu.Lock()
		_, mine := j.inFlight[in.ID]
		j.flightMu.Unlock()
		if mine {
			return "its call is still in flight in this process"
		}
		return ""
	}
	switch {
	case live == nil:
		if age := now.Sub(in.CreatedAt); age < j.cfg.InFlightGrace {
			return fmt.Sprintf("written %s ago by owner %s, which this backend cannot check (InFlightGrace %s)", age, in.Owner, j.cfg.InFlightGrace)
		}
	case live[in.Owner]:
		return "its process is alive (owner " + in.Owner + " holds its lease)"
	}
	return ""
}

// ReconcileIntent settles one intent now, as Reconcile would (used after an UNKNOWN
// outcome), and returns its new state. A settled intent is returned as it is.
func (j *Journal) ReconcileIntent(ctx context.Context, id string) (Intent, error) {
	in, err := j.Get(ctx, id)
	if err != nil || in.State.Settled() {
		return in, err
	}
	return j.settle(ctx, in)
}

// settle asks the lookup about in and records the answer.
func (j *Journal) settle(ctx context.Context, in Intent) (Intent, error) {
	to, note := StateAwaitingOperator, ""
	lookup := j.cfg.Lookups[in.Dependency]
	if lookup == nil {
		note = fmt.Sprintf("no status lookup for dependency %q", in.Dependency)
	} else {
		s, err := lookup(ctx, in)
		switch {
		case err != nil:
			note = "status lookup failed: " + redact.Summary(err.Error()) // the service's words: fingerprint only
		case s == StatusApplied:
			to, note = StateApplied, "status lookup: applied"
		case s == StatusNotApplied:
			to, note = StateNotApplied, "status lookup: not applied"
		default:
			note = "status lookup could not tell"
		}
	}
	if to == in.State && note == in.Note {
		return in, nil
	}
	j.log(slog.LevelInfo, "journal reconciled intent", "id", in.ID, "dependency", in.Dependency, "tool", in.Tool, "from", string(in.State), "to", string(to), "note", note)
	return j.move(ctx, in.ID, "reconcile", to, note, in.State)
}

// move changes an intent's state if it is in one of from, and returns it.
func (j *Journal) move(ctx context.Context, id, op string, to State, note string, from ...State) (Intent, error) {
	_, now := j.micros()
	var n int64
	args := []any{string(to), note, now, id}
	marks := make([]string, len(from))
	for i, s := range from {
		args = append(args, string(s))
		marks[i] = fmt.Sprintf("$%d", len(args))
	}
	err := j.submit(ctx, &write{apply: func(ctx context.Context, q store.Querier) error {
		var err error
		n, err = q.Exec(ctx, `UPDATE `+j.p+`intents SET state = $1, note = $2, updated_at = $3
			WHERE id = $4 AND state IN (`+strings.Join(marks, ", ")+`)`, args...)
		return err
	}})
	if err != nil {
		return Intent{}, fmt.Errorf("journal: %s %s: %w", op, id, err)
	}
	if n == 0 {
		return Intent{}, j.stateError(ctx, id, op, from...)
	}
	return j.Get(ctx, id)
}

// Pending returns the intents waiting for an operator, oldest first: the list an
// admin endpoint shows. Rows that fail their checks are named in a *CorruptError
// returned together with every healthy intent.
func (j *Journal) Pending(ctx context.Context) ([]Intent, error) {
	return j.Intents(ctx, Filter{States: []State{StateAwaitingOperator}})
}

// Approve lets the mutation behind an unsettled intent be sent again: the earlier
// attempt is treated as not applied. It fails with a *StateError for a settled intent.
func (j *Journal) Approve(ctx context.Context, id string) error {
	_, err := j.move(ctx, id, "approve", StateApproved, "approved by operator", unsettled...)
	return err
}

// Discard closes an unsettled intent without a replay: the earlier attempt is treated
// as done. It fails with a *StateError for a settled intent.
func (j *Journal) Discard(ctx context.Context, id string) error {
	_, err := j.move(ctx, id, "discard", StateDiscarded, "discarded by operator", unsettled...)
	return err
}

// replayable says what a state means for sending the call again: applied (do not),
// or not applied (may), and whether the state knows at all.
func replayable(s State) (applied, known bool) {
	switch s {
	case StateSucceeded, StateApplied, StateDiscarded, StateSuperseded:
		return true, true
	case StateFailed, StateFailedBeforeSend, StateNotApplied, StateApproved:
		return false, true
	}
	return false, false
}

// Backlog returns how many intents wait to be settled and when the oldest of them was
// written (zero when there are none): the figures of a "journal pending" gauge. It
// counts intents whose outcome was UNKNOWN, those awaiting an operator, and open ones:
// a call in flight for as long as it runs, and one a crash left open until Reconcile
// settles it, so that a dead process's intents are never invisible.
func (j *Journal) Backlog(ctx context.Context) (n int, oldest time.Time, err error) {
	if j.isClosed() {
		return 0, time.Time{}, ErrClosed
	}
	var count, min int64
	err = j.store.Read(ctx, func(q store.Querier) error {
		return q.Query(ctx, `SELECT COUNT(*), COALESCE(MIN(created_at), 0) FROM `+j.p+`intents WHERE state IN ($1, $2, $3)`,
			[]any{string(StateUnknown), string(StateAwaitingOperator), string(StateOpen)}, func(scan func(...any) error) error { return scan(&count, &min) })
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("journal: reading backlog: %w", err)
	}
	if count > 0 {
		oldest = time.UnixMicro(min).UTC()
	}
	return int(count), oldest, nil
}
