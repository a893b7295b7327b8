package journal

import (
	"context"
	"log/slog"
	"strconv"
	"strings"

	"github.com/agentbreaker/agentbreaker/journal/internal/store"
)

// write is one unit of work for the committer: an intent to insert (batched into
// multi-row inserts), or a function run inside the batch's transaction.
type write struct {
	insert *Intent
	apply  func(ctx context.Context, q store.Querier) error
	done   chan error
}

// commitLoop is the group committer. It takes whatever writes are waiting, up to
// MaxBatch, and commits them in one transaction: while one commit is syncing, the next
// batch gathers, so concurrent writers share syncs instead of queueing for their own.
// Nothing waits on purpose: a lone writer is committed at once.
func (j *Journal) commitLoop() {
	defer close(j.loopDone)
	batch := make([]*write, 0, j.cfg.MaxBatch)
	for {
		var w *write
		select {
		case w = <-j.writes:
		case <-j.stop:
			// Close: commit what is already queued, then leave.
			for {
				select {
				case w := <-j.writes:
					j.commit([]*write{w})
				default:
					return
				}
			}
		}
		batch = append(batch[:0], w)
	gather:
		for len(batch) < j.cfg.MaxBatch {
			select {
			case w := <-j.writes:
				batch = append(batch, w)
			default:
				break gather
			}
		}
		j.commit(batch)
	}
}

// commit writes a batch in one transaction. If the transaction fails, each write is
// retried alone, so one bad write (a duplicate id) cannot fail its neighbours.
func (j *Journal) commit(batch []*write) {
	err := j.commitTx(batch)
	if err == nil || len(batch) == 1 {
		for _, w := range batch {
			w.done <- err
		}
		return
	}
	for _, w := range batch {
		w.done <- j.commitTx([]*write{w})
	}
}

// Stats counts the committer's work since Open.
type Stats struct {
	// Commits is the number of transactions committed; Writes the writes they held.
	// Writes/Commits is the average group size.
	Commits, Writes int64
	// Failed counts transactions that failed.
	Failed int64
}

// Stats returns the committer's counters.
func (j *Journal) Stats() Stats {
	return Stats{Commits: j.commits.Load(), Writes: j.written.Load(), Failed: j.failed.Load()}
}

func (j *Journal) commitTx(batch []*write) error {
	ctx, cancel := context.WithTimeout(context.Background(), j.cfg.WriteTimeout)
	defer cancel()
	err := j.store.Tx(ctx, func(q store.Querier) error {
		var rows []*Intent
		for _, w := range batch {
			if w.insert != nil {
				rows = append(rows, w.insert)
			}
		}
		if err := j.insertIntents(ctx, q, rows); err != nil {
			return err
		}
		for _, w := range batch {
			if w.apply != nil {
				if err := w.apply(ctx, q); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		j.failed.Add(1)
		j.log(slog.LevelError, "journal commit failed", "writes", len(batch), "error", err.Error())
		return err
	}
	j.commits.Add(1)
	j.written.Add(int64(len(batch)))
	return nil
}

// maxRowsPerInsert keeps a statement's parameters under SQLite's and PostgreSQL's limits.
const maxRowsPerInsert = 500

func (j *Journal) insertIntents(ctx context.Context, q store.Querier, rows []*Intent) error {
	for len(rows) > 0 {
		n := min(len(rows), maxRowsPerInsert)
		var sb strings.Builder
		sb.WriteString("INSERT INTO " + j.p + "intents (" + intentCols + ") VALUES ")
		args := make([]any, 0, n*intentColCount)
		for i, in := range rows[:n] {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteByte('(')
			for c := range intentColCount {
				if c > 0 {
					sb.WriteByte(',')
				}
				sb.WriteString("$" + strconv.Itoa(i*intentColCount+c+1))
			}
			sb.WriteByte(')')
			args = append(args, in.values()...)
		}
		if _, err := q.Exec(ctx, sb.String(), args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// submit hands a write to the committer and waits until it is durable. If ctx ends
// first the write may still be committed; the caller must treat it as not acknowledged.
func (j *Journal) submit(ctx context.Context, w *write) error {
	w.done = make(chan error, 1)
	j.closeMu.RLock()
	if j.closed {
		j.closeMu.RUnlock()
		return ErrClosed
	}
	select {
	case j.writes <- w:
	case <-ctx.Done():
		j.closeMu.RUnlock()
		return ctx.Err()
	}
	j.closeMu.RUnlock()
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
