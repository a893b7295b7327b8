package journal

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"time"

	"github.com/agentbreaker/agentbreaker/journal/internal/store"
)

// QueueState is where a queued item stands.
type QueueState string

// The states of a queued item.
const (
	// QueueWaiting: waiting for its dependency to recover.
	QueueWaiting QueueState = "queued"
	// QueueReplaying: taken by a replayer; a crash leaves it here (see
	// admission's recovery of interrupted replays).
	QueueReplaying QueueState = "replaying"
	// QueueReplayed: replayed successfully. Final.
	QueueReplayed QueueState = "replayed"
	// QueueFailed: replayed, and the replay failed. Final.
	QueueFailed QueueState = "failed"
	// QueueExpired: its expiry passed before it could run. Final.
	QueueExpired QueueState = "expired"
	// QueueHandedOver: handed to the application instead of replayed. Final.
	QueueHandedOver QueueState = "handed_over"
	// QueueInterrupted: a replay was under way when its replayer stopped; whether it
	// ran is unknown. Final.
	QueueInterrupted QueueState = "interrupted"
)

// QueueItem is one piece of work waiting for a dependency to recover.
type QueueItem struct {
	// ID is assigned by Enqueue when empty.
	ID         string
	Dependency string
	Tool       string
	RequestID  string
	// IdempotencyKey travels with the replay so that a dependency applies it once.
	IdempotencyKey string
	// Priority orders replays: higher first, then older first.
	Priority int
	// CreatedAt is set by Enqueue when zero.
	CreatedAt time.Time
	// ExpiresAt is when the item is dropped if it has not run. Required.
	ExpiresAt time.Time
	// ReplayPolicy says how to replay it, as the admission package defines.
	ReplayPolicy string
	// Payload is what the replay needs (the call's arguments, say). It is sealed with
	// AES-256-GCM under the journal's key unless Config.StoreArguments, so a reader of
	// the database cannot read it; the journal's methods return it opened.
	Payload   []byte
	State     QueueState
	Reason    string
	UpdatedAt time.Time
}

const queueCols = `id, dependency, tool, request_id, idempotency_key, priority, created_at, expires_at,
	replay_policy, payload, state, reason, updated_at`

// scanQueueItem reads one row and opens its payload. An error is the row's own
// problem (unreadable, or a payload that does not open), reported with its id.
func (j *Journal) scanQueueItem(scan func(...any) error) (QueueItem, error) {
	var it QueueItem
	var prio, created, expires, updated int64
	var state string
	if err := scan(&it.ID, &it.Dependency, &it.Tool, &it.RequestID, &it.IdempotencyKey, &prio, &created, &expires,
		&it.ReplayPolicy, &it.Payload, &state, &it.Reason, &updated); err != nil {
		return it, fmt.Errorf("unreadable row: %v", err)
	}
	it.Priority = int(prio)
	it.CreatedAt = time.UnixMicro(created).UTC()
	it.ExpiresAt = time.UnixMicro(expires).UTC()
	it.UpdatedAt = time.UnixMicro(updated).UTC()
	it.State = QueueState(state)
	var err error
	it.Payload, err = j.open(it.ID, it.Payload)
	return it, err
}

// queueRows collects scanned items, setting the bad ones aside.
type queueRows struct {
	j    *Journal
	out  []QueueItem
	bad  []BadRecord
	keep func(QueueItem) bool // nil keeps every item
}

func (r *queueRows) row(scan func(...any) error) error {
	it, err := r.j.scanQueueItem(scan)
	switch {
	case err != nil:
		r.bad = append(r.bad, BadRecord{ID: it.ID, Problem: err.Error()})
	case r.keep == nil || r.keep(it):
		r.out = append(r.out, it)
	}
	return nil
}

func (r *queueRows) reset() { r.out, r.bad = r.out[:0], r.bad[:0] }

func (r *queueRows) err() error {
	if len(r.bad) > 0 {
		return &CorruptError{Table: "queue", Records: r.bad}
	}
	return nil
}

// replayOrder sorts items as they are replayed: higher priority, then older, then id.
func replayOrder(a, b QueueItem) int {
	if a.Priority != b.Priority {
		return cmp.Compare(b.Priority, a.Priority)
	}
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// Enqueue stores a waiting item durably and returns it as stored. When limit is
// positive and the dependency already has limit items waiting, it stores nothing and
// returns ErrQueueFull; the count and the insert share one transaction, so one
// process never overfills a queue (processes sharing PostgreSQL may overshoot by the
// inserts they race).
func (j *Journal) Enqueue(ctx context.Context, it QueueItem, limit int) (QueueItem, error) {
	switch {
	case it.Dependency == "":
		return it, &ConfigError{Package: "journal", Field: "QueueItem.Dependency", Value: `""`, Problem: "is required"}
	case it.ExpiresAt.IsZero():
		return it, &ConfigError{Package: "journal", Field: "QueueItem.ExpiresAt", Value: "zero", Problem: "is required: a queue without expiry becomes a second outage"}
	}
	now, nowUs := j.micros()
	if it.ID == "" {
		it.ID = "q_" + rand.Text()
	}
	if it.CreatedAt.IsZero() {
		it.CreatedAt = now
	}
	it.CreatedAt = time.UnixMicro(it.CreatedAt.UnixMicro()).UTC()
	it.ExpiresAt = time.UnixMicro(it.ExpiresAt.UnixMicro()).UTC()
	if !it.ExpiresAt.After(it.CreatedAt) {
		return it, &ConfigError{Package: "journal", Field: "QueueItem.ExpiresAt", Value: it.ExpiresAt.Format(time.RFC3339), Problem: "must be after CreatedAt " + it.CreatedAt.Format(time.RFC3339)}
	}
	it.State, it.Reason, it.UpdatedAt = QueueWaiting, "", now
	stored := j.seal(it.ID, it.Payload)
	full := false
	err := j.submit(ctx, &write{apply: func(ctx context.Context, q store.Querier) error {
		full = false
		if limit > 0 {
			var n int64
			if err := q.Query(ctx, `SELECT COUNT(*) FROM `+j.p+`queue WHERE dependency = $1 AND state = $2`,
				[]any{it.Dependency, string(QueueWaiting)}, func(scan func(...any) error) error { return scan(&n) }); err != nil {
				return err
			}
			if n >= int64(limit) {
				full = true
				return nil
			}
		}
		_, err := q.Exec(ctx, `INSERT INTO `+j.p+`queue (`+queueCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			it.ID, it.Dependency, it.Tool, it.RequestID, it.IdempotencyKey, int64(it.Priority), it.CreatedAt.UnixMicro(),
			it.ExpiresAt.UnixMicro(), it.ReplayPolicy, stored, string(it.State), it.Reason, nowUs)
		return err
	}})
	if err != nil {
		return it, fmt.Errorf("journal: queue item for %s not stored: %w", it.Dependency, err)
	}
	if full {
		return it, fmt.Errorf("%w: %d items of %s already wait", ErrQueueFull, limit, it.Dependency)
	}
	return it, nil
}

// Queued returns the items of a dependency ("" for all) in the given states (none for
// all), in replay order: higher priority first, then older first. Rows that fail their
// checks (a payload that does not open) are left out and named in a *CorruptError
// returned with the healthy items.
func (j *Journal) Queued(ctx context.Context, dependency string, limit int, states ...QueueState) ([]QueueItem, error) {
	if j.isClosed() {
		return nil, ErrClosed
	}
	where, args := "WHERE 1 = 1", []any{}
	if dependency != "" {
		args = append(args, dependency)
		where += fmt.Sprintf(" AND dependency = $%d", len(args))
	}
	if len(states) > 0 {
		where += " AND state IN ("
		for i, s := range states {
			args = append(args, string(s))
			if i > 0 {
				where += ", "
			}
			where += fmt.Sprintf("$%d", len(args))
		}
		where += ")"
	}
	where += " ORDER BY priority DESC, created_at, id"
	if limit > 0 {
		where += fmt.Sprintf(" LIMIT %d", limit)
	}
	rows := &queueRows{j: j}
	err := j.store.Read(ctx, func(q store.Querier) error {
		rows.reset()
		return q.Query(ctx, `SELECT `+queueCols+` FROM `+j.p+`queue `+where, args, rows.row)
	})
	if err != nil {
		return nil, fmt.Errorf("journal: reading queue: %w", err)
	}
	return rows.out, rows.err()
}

// CountQueued returns how many items of a dependency are waiting.
func (j *Journal) CountQueued(ctx context.Context, dependency string) (int, error) {
	if j.isClosed() {
		return 0, ErrClosed
	}
	var n int64
	err := j.store.Read(ctx, func(q store.Querier) error {
		return q.Query(ctx, `SELECT COUNT(*) FROM `+j.p+`queue WHERE dependency = $1 AND state = $2`,
			[]any{dependency, string(QueueWaiting)}, func(scan func(...any) error) error { return scan(&n) })
	})
	if err != nil {
		return 0, fmt.Errorf("journal: counting queue: %w", err)
	}
	return int(n), nil
}

// MoveQueued changes an item's state from from to to, with a reason, and reports
// whether it did: false means the item was not in state from (another replayer took
// it), which makes the move a claim that is safe across processes.
func (j *Journal) MoveQueued(ctx context.Context, id string, from, to QueueState, reason string) (bool, error) {
	_, now := j.micros()
	var n int64
	err := j.submit(ctx, &write{apply: func(ctx context.Context, q store.Querier) error {
		var err error
		n, err = q.Exec(ctx, `UPDATE `+j.p+`queue SET state = $1, reason = $2, updated_at = $3 WHERE id = $4 AND state = $5`,
			string(to), reason, now, id, string(from))
		return err
	}})
	if err != nil {
		return false, fmt.Errorf("journal: moving queue item %s: %w", id, err)
	}
	return n == 1, nil
}

// ExpireQueued marks every waiting item of a dependency ("" for all) whose expiry is
// at or before now as expired, and returns those items.
func (j *Journal) ExpireQueued(ctx context.Context, dependency string, now time.Time) ([]QueueItem, error) {
	_, stamp := j.micros()
	cut := now.UnixMicro()
	reason := "expired at " + now.UTC().Format(time.RFC3339) + " before its dependency recovered"
	rows := &queueRows{j: j}
	err := j.submit(ctx, &write{apply: func(ctx context.Context, q store.Querier) error {
		rows.reset()
		sql := `UPDATE ` + j.p + `queue SET state = $1, reason = $2, updated_at = $3 WHERE state = $4 AND expires_at <= $5`
		args := []any{string(QueueExpired), reason, stamp, string(QueueWaiting), cut}
		if dependency != "" {
			sql += ` AND dependency = $6`
			args = append(args, dependency)
		}
		return q.Query(ctx, sql+` RETURNING `+queueCols, args, rows.row)
	}})
	if err != nil {
		return nil, fmt.Errorf("journal: expiring queue items: %w", err)
	}
	slices.SortFunc(rows.out, replayOrder)
	return rows.out, rows.err()
}

// ClaimQueued takes the next waiting item of a dependency that has not expired by
// now, in replay order, and moves it to QueueReplaying with reason, in one commit. It
// returns false when none waits. Claims are atomic: two replayers (or processes
// sharing PostgreSQL) never take the same item.
func (j *Journal) ClaimQueued(ctx context.Context, dependency string, now time.Time, reason string) (QueueItem, bool, error) {
	_, stamp := j.micros()
	rows := &queueRows{j: j}
	err := j.submit(ctx, &write{apply: func(ctx context.Context, q store.Querier) error {
		rows.reset()
		// Another process may claim the item between the select and the update: the
		// update then changes nothing, and the next item is tried.
		for range 16 {
			var id string
			if err := q.Query(ctx, `SELECT id FROM `+j.p+`queue WHERE dependency = $1 AND state = $2 AND expires_at > $3
				ORDER BY priority DESC, created_at, id LIMIT 1`, []any{dependency, string(QueueWaiting), now.UnixMicro()},
				func(scan func(...any) error) error { return scan(&id) }); err != nil {
				return err
			}
			if id == "" {
				return nil
			}
			if err := q.Query(ctx, `UPDATE `+j.p+`queue SET state = $1, reason = $2, updated_at = $3 WHERE id = $4 AND state = $5
				RETURNING `+queueCols, []any{string(QueueReplaying), reason, stamp, id, string(QueueWaiting)}, rows.row); err != nil {
				return err
			}
			if len(rows.out)+len(rows.bad) > 0 {
				return nil
			}
		}
		return nil
	}})
	if err != nil {
		return QueueItem{}, false, fmt.Errorf("journal: claiming a queue item of %s: %w", dependency, err)
	}
	if err := rows.err(); err != nil {
		return QueueItem{}, false, err // claimed, but its payload does not open: the caller reports it
	}
	if len(rows.out) == 0 {
		return QueueItem{}, false, nil
	}
	return rows.out[0], true, nil
}

// QueuedDependencies returns the dependencies that have items waiting, sorted.
func (j *Journal) QueuedDependencies(ctx context.Context) ([]string, error) {
	if j.isClosed() {
		return nil, ErrClosed
	}
	var out []string
	err := j.store.Read(ctx, func(q store.Querier) error {
		out = out[:0]
		return q.Query(ctx, `SELECT DISTINCT dependency FROM `+j.p+`queue WHERE state = $1 ORDER BY dependency`,
			[]any{string(QueueWaiting)}, func(scan func(...any) error) error {
				var d string
				if err := scan(&d); err != nil {
					return err
				}
				out = append(out, d)
				return nil
			})
	})
	if err != nil {
		return nil, fmt.Errorf("journal: reading queued dependencies: %w", err)
	}
	return out, nil
}

// UnresolvedKey returns the intents carrying idempotency key whose outcome is still
// open, unknown or awaiting an operator: while there are any, the operation behind
// the key may already have been applied, and it must not be replayed automatically.
func (j *Journal) UnresolvedKey(ctx context.Context, key string) ([]Intent, error) {
	return j.Intents(ctx, Filter{IdempotencyKey: key, States: unsettled})
}
