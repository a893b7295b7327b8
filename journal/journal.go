package journal

import (
	"context"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/journal/internal/store"
	"github.com/agentbreaker/agentbreaker/retry"
)

// Journal makes dispatch intents durable before side-effecting calls are sent, records
// their outcomes, and settles the ones a crash or an UNKNOWN outcome left open. It also
// stores the admission queue. It is safe for concurrent use: writes from all goroutines
// are group-committed by one committer.
type Journal struct {
	cfg   Config
	key   []byte // the secret: Config.HashKey, or the one in Config.KeyFile
	aead  cipher.AEAD
	store store.Store
	p     string // table prefix
	owner string

	writes   chan *write
	stop     chan struct{}
	loopDone chan struct{}
	closeMu  sync.RWMutex
	closed   bool

	commits, written, failed, lostAcks, txs atomic.Int64
	// waiting counts writers inside submit; peakWaiting is its value at the last
	// commit, and lastCommit that commit's duration (ns): the group committer's cues.
	waiting, peakWaiting, lastCommit atomic.Int64

	flightMu sync.Mutex
	inFlight map[string]struct{} // this instance's intents without an outcome yet
}

// Open opens (creating when needed) the journal's tables, migrates them to the current
// schema version, and starts the committer. It does I/O, hence the context and the
// name; there is no MustOpen, because a database can fail at run time.
func Open(ctx context.Context, cfg Config) (*Journal, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	key := cfg.HashKey
	if len(key) == 0 {
		var err error
		if key, err = loadKey(cfg.KeyFile); err != nil {
			return nil, err
		}
	}
	aead, err := payloadAEAD(key)
	if err != nil {
		return nil, err
	}
	s, err := cfg.Backend.Open(ctx, cfg.Prefix)
	if err != nil {
		return nil, err
	}
	if _, err := migrate(ctx, s, cfg.Prefix, cfg.Clock.Now().UnixMicro()); err != nil {
		s.Close()
		return nil, fmt.Errorf("journal: migrating tables %q: %w", cfg.Prefix, err)
	}
	owner := rand.Text()
	if err := s.Claim(ctx, owner); err != nil {
		s.Close()
		return nil, err
	}
	j := &Journal{
		cfg:      cfg,
		key:      key,
		aead:     aead,
		store:    s,
		p:        cfg.Prefix,
		owner:    owner,
		writes:   make(chan *write, cfg.MaxBatch),
		stop:     make(chan struct{}),
		loopDone: make(chan struct{}),
		inFlight: map[string]struct{}{},
	}
	go j.commitLoop()
	if cfg.ReconcileOnOpen {
		if err := j.reconcileOnOpen(ctx); err != nil {
			j.Close()
			return nil, err
		}
	}
	return j, nil
}

// reconcileOnOpen is Config.ReconcileOnOpen: Reconcile, with one record of its counts.
func (j *Journal) reconcileOnOpen(ctx context.Context) error {
	r, err := j.Reconcile(ctx)
	if err != nil {
		return fmt.Errorf("journal: reconciling at open: %w", err)
	}
	j.log(slog.LevelInfo, "journal: reconciled at open", "applied", len(r.Applied), "not_applied", len(r.NotApplied),
		"awaiting", len(r.Awaiting), "skipped", len(r.Skipped), "corrupt", len(r.Corrupt))
	return nil
}

// Close commits the writes already handed over, stops the committer and closes the
// database. Later calls fail with ErrClosed.
func (j *Journal) Close() error {
	j.closeMu.Lock()
	if j.closed {
		j.closeMu.Unlock()
		return nil
	}
	j.closed = true
	j.closeMu.Unlock()
	close(j.stop)
	<-j.loopDone
	return j.store.Close()
}

// Owner identifies this Journal instance in the intents it writes.
func (j *Journal) Owner() string { return j.owner }

// HashArgs returns the hash stored for args and their canonical JSON (see
// retry.CanonicalArgs): HMAC-SHA-256 under the journal's secret (Config.HashKey or
// Config.KeyFile), so that a reader of the database cannot test guesses against it.
func (j *Journal) HashArgs(args map[string]any) (hash string, canonical []byte, err error) {
	canonical, err = retry.CanonicalArgs(args)
	if err != nil {
		return "", nil, err
	}
	m := hmac.New(sha256.New, j.key)
	m.Write(canonical)
	return hex.EncodeToString(m.Sum(nil)), canonical, nil
}

func (j *Journal) micros() (time.Time, int64) {
	now := j.cfg.Clock.Now()
	us := now.UnixMicro()
	return time.UnixMicro(us).UTC(), us
}

// Intend makes a dispatch intent durable and returns it. Send the call only after
// Intend returned without error. Concurrent intents are committed together.
func (j *Journal) Intend(ctx context.Context, d Dispatch) (Intent, error) {
	if err := checkDispatch(d); err != nil {
		return Intent{}, err
	}
	hash, canonical, err := j.HashArgs(d.Args)
	if err != nil {
		return Intent{}, &ConfigError{Package: "journal", Field: "Dispatch.Args", Value: fmt.Sprintf("%d argument(s) of tool %q", len(d.Args), d.Tool), Problem: err.Error()}
	}
	now, _ := j.micros()
	in := Intent{
		ID: "in_" + rand.Text(), RequestID: d.RequestID, IdempotencyKey: d.IdempotencyKey,
		Dependency: d.Dependency, Tool: d.Tool, ArgsHash: hash, Attempt: d.Attempt,
		PolicyVersion: d.PolicyVersion, CreatedAt: now, Owner: j.owner,
		State: StateOpen, UpdatedAt: now,
	}
	if j.cfg.StoreArguments {
		in.Args = canonical
	}
	in.Checksum = in.checksum()
	j.flightMu.Lock()
	j.inFlight[in.ID] = struct{}{}
	j.flightMu.Unlock()
	if err := j.submit(ctx, &write{insert: &in}); err != nil {
		// Not acknowledged; if it was written after all, reconciliation will find it.
		j.landed(in.ID)
		return Intent{}, fmt.Errorf("journal: intent for %s/%s not recorded: %w", d.Dependency, d.Tool, err)
	}
	return in, nil
}

func (j *Journal) landed(id string) {
	j.flightMu.Lock()
	delete(j.inFlight, id)
	j.flightMu.Unlock()
}

func checkDispatch(d Dispatch) error {
	required := []struct{ field, v string }{
		{"Dispatch.RequestID", d.RequestID}, {"Dispatch.IdempotencyKey", d.IdempotencyKey},
		{"Dispatch.Dependency", d.Dependency}, {"Dispatch.Tool", d.Tool},
	}
	for _, r := range required {
		if r.v == "" {
			return &ConfigError{Package: "journal", Field: r.field, Value: `""`, Problem: "is required"}
		}
		if len(r.v) > 512 {
			return &ConfigError{Package: "journal", Field: r.field, Value: fmt.Sprintf("%.40q…", r.v), Problem: "is longer than 512 bytes"}
		}
	}
	if d.Attempt < 1 {
		return &ConfigError{Package: "journal", Field: "Dispatch.Attempt", Value: d.Attempt, Problem: "must be at least 1"}
	}
	return nil
}

// Finish records the outcome of the call behind intent id. It moves only an open
// intent; one that reconciliation or an operator already settled gives a *StateError.
func (j *Journal) Finish(ctx context.Context, id string, c classify.Classification) error {
	state, err := stateOf(c.Outcome)
	if err != nil {
		return err
	}
	_, now := j.micros()
	var n int64
	err = j.submit(ctx, &write{apply: func(ctx context.Context, q store.Querier) error {
		var err error
		n, err = q.Exec(ctx, `UPDATE `+j.p+`intents SET state = $1, outcome = $2, error_class = $3, updated_at = $4
			WHERE id = $5 AND state = $6`, string(state), c.Outcome.String(), string(c.Class), now, id, string(StateOpen))
		if err != nil || n == 0 || state != StateSucceeded {
			return err
		}
		// This attempt succeeded: the earlier attempts of the same operation (same
		// request id and idempotency key) whose outcome was unknown need no
		// reconciliation, since under one key the operation took effect once, and a
		// read has no effect at all. Without this a read that timed out once and then
		// succeeded would wait in the backlog for an operator.
		_, err = q.Exec(ctx, `UPDATE `+j.p+`intents SET state = $1, note = $2, updated_at = $3
			WHERE state IN ($4, $5) AND id <> $6
			AND request_id = (SELECT request_id FROM `+j.p+`intents WHERE id = $6)
			AND idempotency_key = (SELECT idempotency_key FROM `+j.p+`intents WHERE id = $6)`,
			string(StateSuperseded), "a later attempt of the same operation ("+id+") succeeded", now,
			string(StateUnknown), string(StateAwaitingOperator), id)
		return err
	}})
	j.landed(id) // the call is over either way; an unrecorded outcome is for Reconcile
	if err != nil {
		return fmt.Errorf("journal: outcome of %s not recorded: %w", id, err)
	}
	if n == 0 {
		return j.stateError(ctx, id, "finish", StateOpen)
	}
	return nil
}

// stateError explains why a conditional update changed nothing.
func (j *Journal) stateError(ctx context.Context, id, op string, want ...State) error {
	in, err := j.Get(ctx, id)
	if err != nil {
		return err
	}
	ws := make([]string, len(want))
	for i, w := range want {
		ws[i] = string(w)
	}
	return &StateError{ID: id, State: string(in.State), Want: ws, Op: op}
}

// Get returns the intent with id, verified against its checksum.
func (j *Journal) Get(ctx context.Context, id string) (Intent, error) {
	list, err := j.selectIntents(ctx, `WHERE id = $1`, id)
	if err != nil {
		return Intent{}, err
	}
	if len(list) == 0 {
		return Intent{}, fmt.Errorf("%w: intent %q", ErrNotFound, id)
	}
	return list[0], nil
}

// Filter selects intents. Empty fields match everything.
type Filter struct {
	States         []State
	Dependency     string
	Tool           string
	ArgsHash       string
	IdempotencyKey string
	RequestID      string
	// Limit caps the result; 0 means no cap.
	Limit int
}

// Intents returns the intents that match f, oldest first. A stored row that fails its
// checks does not hide the others: they are returned, with a *CorruptError that
// names each bad row and its problem (errors.Is(err, ErrCorrupt)).
func (j *Journal) Intents(ctx context.Context, f Filter) ([]Intent, error) {
	var conds []string
	var args []any
	add := func(col, v string) {
		if v != "" {
			args = append(args, v)
			conds = append(conds, fmt.Sprintf("%s = $%d", col, len(args)))
		}
	}
	add("dependency", f.Dependency)
	add("tool", f.Tool)
	add("args_hash", f.ArgsHash)
	add("idempotency_key", f.IdempotencyKey)
	add("request_id", f.RequestID)
	if len(f.States) > 0 {
		marks := make([]string, len(f.States))
		for i, s := range f.States {
			args = append(args, string(s))
			marks[i] = fmt.Sprintf("$%d", len(args))
		}
		conds = append(conds, "state IN ("+strings.Join(marks, ", ")+")")
	}
	where := ""
	if len(conds) > 0 {
		where = "WHERE " + strings.Join(conds, " AND ")
	}
	where += " ORDER BY created_at, id"
	if f.Limit > 0 {
		where += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	return j.selectIntents(ctx, where, args...)
}

func (j *Journal) selectIntents(ctx context.Context, where string, args ...any) ([]Intent, error) {
	if j.isClosed() {
		return nil, ErrClosed
	}
	var out []Intent
	var bad []BadRecord
	err := j.store.Read(ctx, func(q store.Querier) error {
		out, bad = out[:0], bad[:0]
		return q.Query(ctx, `SELECT `+intentCols+` FROM `+j.p+`intents `+where, args, func(scan func(...any) error) error {
			in, err := scanIntent(scan)
			if err != nil {
				bad = append(bad, BadRecord{ID: in.ID, Problem: err.Error()})
				return nil
			}
			out = append(out, in)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("journal: reading intents: %w", err)
	}
	if len(bad) > 0 {
		return out, &CorruptError{Table: "intents", Records: bad}
	}
	return out, nil
}

func (j *Journal) isClosed() bool {
	j.closeMu.RLock()
	defer j.closeMu.RUnlock()
	return j.closed
}

// Unresolved returns the earlier attempts of the same call (tool and argument hash)
// whose outcome is still open, unknown or awaiting an operator. A mutation with any of
// them must not be sent again without approval: ask the operator (in adk-go, through
// tool confirmation) and Approve or Discard them first.
func (j *Journal) Unresolved(ctx context.Context, tool, argsHash string) ([]Intent, error) {
	return j.Intents(ctx, Filter{Tool: tool, ArgsHash: argsHash, States: unsettled})
}

func (j *Journal) log(level slog.Level, msg string, args ...any) {
	if l := j.cfg.Logger; l != nil {
		l.Log(context.Background(), level, msg, args...)
	}
}
