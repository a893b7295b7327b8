package journal

import (
	"context"
	"crypto/rand"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/redact"

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
//
// Without more, concurrent writers split into two groups that take turns: the writers
// just acknowledged are still on their way back when the next batch (the ones that
// arrived during the commit) starts. So when more writers were waiting on the last
// commit than the batch now holds, the committer waits a little for them: at most a
// quarter of the last commit's duration, capped by Config.MaxCommitDelay. A lone
// writer never waits (one writer was waiting, and the batch holds one), and a wait
// that gained nothing is not repeated on the next commit. The wait is measured on the
// monotonic system clock, not Config.Clock: it is about the database's speed, not the
// records' times.
func (j *Journal) commitLoop() {
	defer close(j.loopDone)
	batch := make([]*write, 0, j.cfg.MaxBatch)
	var timer *time.Timer
	waited := true // whether the last wait gained writes (or there was none)
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
		want := min(int(j.peakWaiting.Load()), j.cfg.MaxBatch)
		if delay := min(time.Duration(j.lastCommit.Load())/4, j.cfg.MaxCommitDelay); len(batch) < want && delay > 0 && waited {
			before := len(batch)
			if timer == nil {
				timer = time.NewTimer(delay)
			} else {
				timer.Reset(delay)
			}
		wait:
			for len(batch) < want {
				select {
				case w := <-j.writes:
					batch = append(batch, w)
				case <-timer.C:
					break wait
				case <-j.stop:
					break wait
				}
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			waited = len(batch) > before
		} else {
			waited = true
		}
		j.commit(batch)
	}
}

// commit writes a batch in one transaction. If the commit reports an error, the
// batch says whether it went through all the same (the server committed and the
// acknowledgement was lost): its first new intent, or for a batch that inserts none
// its commit marker, is found. Then every write succeeded, and nothing is written
// twice. If it did not, each write is retried alone, so one bad write cannot fail its
// neighbours. If even that cannot be told, every write fails: its caller treats it as
// not acknowledged, and reconciliation finds what landed.
func (j *Journal) commit(batch []*write) {
	proof := j.proofOf(batch)
	start := time.Now()
	err := j.commitTx(batch, proof)
	j.lastCommit.Store(int64(time.Since(start)))
	// Every writer inside submit now is waiting on this commit or queued for the
	// next: the size the next batch can reach once this one's writers come back.
	j.peakWaiting.Store(j.waiting.Load())
	if err != nil {
		committed, cerr := j.committed(proof)
		switch {
		case cerr != nil:
			j.log(slog.LevelError, "journal: cannot tell whether a failed commit went through", "writes", len(batch), redact.ErrorAttr("error", cerr))
		case committed:
			j.lostAcks.Add(1)
			err = nil
		case len(batch) > 1:
			for _, w := range batch {
				one := []*write{w}
				err := j.commitTx(one, j.proofOf(one))
				if err == nil {
					j.commits.Add(1)
					j.written.Add(1)
				}
				w.done <- err
			}
			return
		default:
			// A lone write that did not commit: retried once, as a batch would be.
			err = j.commitTx(batch, j.proofOf(batch))
		}
	}
	if err == nil {
		j.commits.Add(1)
		j.written.Add(int64(len(batch)))
	}
	for _, w := range batch {
		w.done <- err
	}
}

// proof is what shows that a batch committed: the id of an intent it inserts, or
// else a marker row it writes to the commits table.
type proof struct {
	table, id string
}

func (j *Journal) proofOf(batch []*write) proof {
	for _, w := range batch {
		if w.insert != nil {
			return proof{"intents", w.insert.ID}
		}
	}
	return proof{"commits", "c_" + rand.Text()}
}

// committed reports whether the batch with proof p was committed.
func (j *Journal) committed(p proof) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), j.cfg.WriteTimeout)
	defer cancel()
	var n int64
	err := j.store.Read(ctx, func(q store.Querier) error {
		return q.Query(ctx, `SELECT COUNT(*) FROM `+j.p+p.table+` WHERE id = $1`, []any{p.id},
			func(scan func(...any) error) error { return scan(&n) })
	})
	return n == 1, err
}

// Stats counts the committer's work since Open.
type Stats struct {
	// Commits is the number of transactions committed; Writes the writes they held.
	// Writes/Commits is the average group size.
	Commits, Writes int64
	// Failed counts transactions that failed.
	Failed int64
	// LostAcks counts commits that reported an error but had gone through (their
	// marker was found); their writes were acknowledged once, not written again.
	LostAcks int64
}

// Stats returns the committer's counters.
func (j *Journal) Stats() Stats {
	return Stats{Commits: j.commits.Load(), Writes: j.written.Load(), Failed: j.failed.Load(), LostAcks: j.lostAcks.Load()}
}

// markerKeep is how long commit markers are kept: far longer than a commit can take
// to report its error.
const markerKeep = time.Hour

func (j *Journal) commitTx(batch []*write, p proof) error {
	ctx, cancel := context.WithTimeout(context.Background(), j.cfg.WriteTimeout)
	defer cancel()
	_, now := j.micros()
	prune := j.txs.Add(1)%1000 == 0
	err := j.store.Tx(ctx, func(q store.Querier) error {
		if p.table == "commits" {
			if _, err := q.Exec(ctx, `INSERT INTO `+j.p+`commits (id, at) VALUES ($1, $2)`, p.id, now); err != nil {
				return err
			}
		}
		if prune {
			if _, err := q.Exec(ctx, `DELETE FROM `+j.p+`commits WHERE at < $1`, now-markerKeep.Microseconds()); err != nil {
				return err
			}
		}
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
		j.log(slog.LevelError, "journal commit failed", "writes", len(batch), redact.ErrorAttr("error", err))
		return err
	}
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
	j.waiting.Add(1)
	defer j.waiting.Add(-1)
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
