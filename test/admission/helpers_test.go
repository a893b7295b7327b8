package admission_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/retry"

	"github.com/stretchr/testify/require"
)

type rig struct {
	clk     *clock.Fake
	m       *dependencymap.Map
	crm     *breaker.Breaker
	j       *journal.Journal
	jcfg    journal.Config
	ctrl    *admission.Controller
	sleeper *retry.FakeSleeper

	mu       sync.Mutex
	events   []admission.Event
	replayed []string
	notify   chan admission.Event
}

// newRig builds a controller over a "crm" dependency (cooldown 30s) and a journal in a
// temporary SQLite file. mod may change the Config before New.
func newRig(t *testing.T, mod func(*admission.Config)) *rig {
	t.Helper()
	r := &rig{clk: clock.NewFake(time.Time{}), notify: make(chan admission.Event, 1000)}
	r.m = dependencymap.MustNew(dependencymap.Config{
		Clock: r.clk,
		Dependencies: map[string]dependencymap.Dependency{
			"crm": {Policy: breaker.Policy{MinimumCalls: 1, Cooldown: 30 * time.Second, Jitter: -1}},
		},
		// The controller is built after the map; the listener reaches it through r.
		OnStateChange: []func(breaker.Event){func(e breaker.Event) {
			if r.ctrl != nil {
				r.ctrl.OnStateChange(e)
			}
		}},
	})
	r.crm, _ = r.m.Get("crm")
	r.jcfg = journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "queue.db")}, Clock: r.clk}
	j, err := journal.Open(context.Background(), r.jcfg)
	require.NoError(t, err)
	r.j = j
	t.Cleanup(func() { r.j.Close() })
	r.sleeper = &retry.FakeSleeper{Clock: r.clk}
	cfg := admission.Config{
		Map: r.m, Journal: j, Clock: r.clk, Sleeper: r.sleeper, ReplayRate: 2,
		Replay: func(_ context.Context, it journal.QueueItem) error {
			r.mu.Lock()
			r.replayed = append(r.replayed, it.ID)
			r.mu.Unlock()
			return nil
		},
		OnEvent: []func(admission.Event){func(e admission.Event) {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
			r.notify <- e
		}},
	}
	if mod != nil {
		mod(&cfg)
	}
	r.ctrl = admission.MustNew(cfg)
	return r
}

// trip opens the crm breaker.
func (r *rig) trip(t *testing.T) {
	p, err := r.crm.Allow()
	require.NoError(t, err)
	p.Failure()
	require.Equal(t, breaker.Open, r.crm.State())
}

func (r *rig) kinds() []admission.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []admission.EventKind
	for _, e := range r.events {
		out = append(out, e.Kind)
	}
	return out
}

func (r *rig) replays() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.replayed...)
}

// queue admits waiting work and requires that it was queued.
func (r *rig) queue(t *testing.T, tool string, prio admission.Priority, wait time.Duration) admission.Decision {
	t.Helper()
	d, err := r.ctrl.Admit(t.Context(), admission.Work{Dependency: "crm", Tool: tool, Priority: prio, MaxWait: wait,
		IdempotencyKey: "key-" + tool, Payload: []byte(`{"tool":"` + tool + `"}`)})
	require.NoError(t, err)
	require.Equal(t, admission.Queue, d.Verdict, d.Message(nil))
	return d
}
