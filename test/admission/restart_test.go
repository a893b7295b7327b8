package admission_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/postgres"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/retry"

	"github.com/stretchr/testify/require"
)

// journalConfigs returns a fresh journal configuration per backend.
func journalConfigs(t *testing.T) map[string]func(t *testing.T) journal.Config {
	return map[string]func(t *testing.T) journal.Config{
		"sqlite": func(t *testing.T) journal.Config {
			return journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "q.db")}}
		},
		"postgres": func(t *testing.T) journal.Config {
			dsn := testenv.PostgresDSN(t)
			prefix := testenv.PostgresJournalPrefix(t)
			return journal.Config{Backend: postgres.Backend{DSN: dsn}, Prefix: prefix, HashKey: []byte("admission-test-secret-0123")}
		},
	}
}

// process is one agent process: its own breakers, journal handle and controller.
type process struct {
	m    *dependencymap.Map
	j    *journal.Journal
	ctrl *admission.Controller
	tick chan time.Time
	mu   sync.Mutex
	keys []string // idempotency keys of the replays, in order
	ev   chan admission.Event
}

func startProcess(t *testing.T, jcfg journal.Config, clk *clock.Fake) *process {
	t.Helper()
	p := &process{tick: make(chan time.Time), ev: make(chan admission.Event, 100)}
	p.m = dependencymap.MustNew(dependencymap.Config{Clock: clk, Dependencies: map[string]dependencymap.Dependency{
		"payments": {Policy: breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second, Jitter: -1}},
	}})
	jcfg.Clock = clk
	j, err := journal.Open(t.Context(), jcfg)
	require.NoError(t, err)
	p.j = j
	p.ctrl = admission.MustNew(admission.Config{Map: p.m, Journal: j, Clock: clk, Sleeper: &retry.FakeSleeper{Clock: clk},
		ReplayRate: 10,
		NewTicker:  func(time.Duration) (<-chan time.Time, func()) { return p.tick, func() {} },
		Replay: func(_ context.Context, it journal.QueueItem) error {
			p.mu.Lock()
			p.keys = append(p.keys, it.IdempotencyKey)
			p.mu.Unlock()
			return nil
		},
		OnEvent: []func(admission.Event){func(e admission.Event) { p.ev <- e }},
	})
	return p
}

func (p *process) replayedKeys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.keys...)
}

func (p *process) next(t *testing.T, kind admission.EventKind) admission.Event {
	t.Helper()
	for e := range p.ev {
		if e.Kind == kind {
			return e
		}
	}
	t.Fatal("no more events")
	return admission.Event{}
}

// TestQueueSurvivesARestart is issue 14b: three durable items queued while payments
// was down are replayed by the next process at start-up (its breakers start closed, so
// no transition would ever wake them), each with its own idempotency key; an item
// another process queues later is drained by the next sweep.
func TestQueueSurvivesARestart(t *testing.T) {
	for name, jcfg := range journalConfigs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := jcfg(t)
			clk := clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
			first := startProcess(t, cfg, clk)
			b, _ := first.m.Get("payments")
			pm, err := b.Allow()
			require.NoError(t, err)
			pm.Failure()
			require.Equal(t, breaker.Open, b.State())
			for i, k := range []string{"key-a", "key-b", "key-c"} {
				d, err := first.ctrl.Admit(t.Context(), admission.Work{Dependency: "payments", Tool: "charge",
					IdempotencyKey: k, Priority: admission.PriorityHigh - admission.Priority(i), MaxWait: time.Hour,
					Payload: []byte(`{"amount":` + string(rune('1'+i)) + `}`)})
				require.NoError(t, err)
				require.Equal(t, admission.Queue, d.Verdict)
			}
			require.NoError(t, first.j.Close()) // the process stops

			clk.Advance(time.Minute)
			second := startProcess(t, cfg, clk)
			defer second.j.Close()
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- second.ctrl.Run(ctx) }()
			for range 3 {
				second.next(t, admission.EventReplayed)
			}
			require.Equal(t, []string{"key-a", "key-b", "key-c"}, second.replayedKeys(), "all three, in priority order, with their keys")

			// Another process queues an item while this one's breaker is closed: no
			// transition here, so the sweep drains it.
			_, err = second.j.Enqueue(t.Context(), journal.QueueItem{Dependency: "payments", Tool: "charge",
				IdempotencyKey: "key-d", ExpiresAt: clk.Now().Add(time.Hour), ReplayPolicy: "auto"}, 0)
			require.NoError(t, err)
			second.tick <- clk.Now()
			second.next(t, admission.EventReplayed)
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)
			require.Equal(t, []string{"key-a", "key-b", "key-c", "key-d"}, second.replayedKeys())
			left, err := second.j.Queued(t.Context(), "payments", 0, journal.QueueWaiting, journal.QueueReplaying)
			require.NoError(t, err)
			require.Empty(t, left)
		})
	}
}

// TestReplayCostsTwoCommits is issue 14h's queue half: claiming an item and recording
// its result are the only commits of a replay (the old drain also expired per item:
// three).
func TestReplayCostsTwoCommits(t *testing.T) {
	r := newRig(t, nil)
	r.trip(t)
	for i := range 5 {
		r.queue(t, "t"+string(rune('a'+i)), admission.PriorityHigh, time.Hour)
	}
	r.clk.Advance(30 * time.Second)
	p, err := r.crm.Allow()
	require.NoError(t, err)
	p.Success()
	before := r.j.Stats().Commits
	rep, err := r.ctrl.Drain(t.Context(), "crm")
	require.NoError(t, err)
	require.Equal(t, 5, rep.Replayed)
	commits := r.j.Stats().Commits - before
	t.Logf("%d commits for %d replays (%.1f per item, one expiry sweep included)", commits, rep.Replayed, float64(commits)/5)
	require.Equal(t, int64(1+2*5), commits)
}

// TestUnresolvedAttemptIsNeitherQueuedNorReplayed is issue 14a's admission half: an
// operation whose earlier attempt (same idempotency key) has an unknown outcome is not
// queued, and an item queued before that attempt became unknown is handed over, not
// replayed.
func TestUnresolvedAttemptIsNeitherQueuedNorReplayed(t *testing.T) {
	var handed []string
	r := newRig(t, func(c *admission.Config) {
		c.OnHandOver = func(it journal.QueueItem) { handed = append(handed, it.IdempotencyKey) }
	})
	r.trip(t)
	queued := r.queue(t, "charge", admission.PriorityHigh, time.Hour) // key "key-charge"
	in, err := r.j.Intend(t.Context(), journal.Dispatch{RequestID: "op-1", IdempotencyKey: "key-charge", Dependency: "crm",
		Tool: "charge", Attempt: 1})
	require.NoError(t, err)
	require.NoError(t, r.j.Finish(t.Context(), in.ID, classify.ForClass(classify.ClassTimeout)))

	d, err := r.ctrl.Admit(t.Context(), admission.Work{Dependency: "crm", Tool: "charge", Priority: admission.PriorityHigh,
		MaxWait: time.Hour, IdempotencyKey: "key-charge"})
	require.NoError(t, err)
	require.Equal(t, admission.Reject, d.Verdict)
	require.Equal(t, admission.ReasonUnresolved, d.Reason)
	require.Contains(t, d.Message(nil), "Do not repeat it")

	r.clk.Advance(30 * time.Second)
	p, err := r.crm.Allow()
	require.NoError(t, err)
	p.Success()
	rep, err := r.ctrl.Drain(t.Context(), "crm")
	require.NoError(t, err)
	require.Equal(t, admission.DrainReport{HandedOver: 1}, rep)
	require.Empty(t, r.replays(), "not replayed")
	require.Equal(t, []string{"key-charge"}, handed)
	items, err := r.j.Queued(t.Context(), "crm", 0, journal.QueueHandedOver)
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, queued.ItemID, items[0].ID)
	require.Equal(t, "not replayed: an earlier attempt of it (intent "+in.ID+") has an unknown outcome; settle it first", items[0].Reason)
}
