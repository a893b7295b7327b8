package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

const token = "s3cr3t-t0ken-for-tests-0123456789"

// memJournal is an in-memory JournalAdmin: the contract the journal package will
// implement, kept by this test.
type memJournal struct {
	mu        sync.Mutex
	intents   []admin.Intent
	approved  []string
	discarded []string
	failWith  error
}

func (j *memJournal) Pending(context.Context) ([]admin.Intent, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failWith != nil {
		return nil, j.failWith
	}
	return slices.Clone(j.intents), nil
}

func (j *memJournal) resolve(id string, into *[]string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failWith != nil {
		return j.failWith
	}
	i := slices.IndexFunc(j.intents, func(in admin.Intent) bool { return in.ID == id })
	if i < 0 {
		return fmt.Errorf("journal: intent %q: %w", id, admin.ErrNotFound)
	}
	j.intents = slices.Delete(j.intents, i, i+1)
	*into = append(*into, id)
	return nil
}

// resolved returns the IDs approved and discarded so far.
func (j *memJournal) resolved() (approved, discarded []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.approved), slices.Clone(j.discarded)
}

func (j *memJournal) fail(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.failWith = err
}

func (j *memJournal) Approve(_ context.Context, id string) error { return j.resolve(id, &j.approved) }
func (j *memJournal) Discard(_ context.Context, id string) error { return j.resolve(id, &j.discarded) }

type staticBulkheads []admin.BulkheadStatus

func (s staticBulkheads) BulkheadStatus() []admin.BulkheadStatus { return s }

type staticRoutes []admin.RouteStatus

func (s staticRoutes) RouteStatus() []admin.RouteStatus { return s }

// logSink is an io.Writer safe for concurrent slog writes.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *logSink) records(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		out = append(out, m)
	}
	return out
}

type fixture struct {
	srv     *httptest.Server
	history *admin.History
	deps    *dependencymap.Map
	journal *memJournal
	reg     *prometheus.Registry
	logs    *logSink
	clock   *clock.Fake
}

// newFixture serves a Handler from a real HTTP server on 127.0.0.1. The dependency map
// has "crm" (closed) and "search" (tripped open), and its transitions feed a real
// Telemetry, so operator actions can be seen as counted transitions.
func newFixture(t *testing.T, mutate ...func(*admin.Config)) *fixture {
	t.Helper()
	f := &fixture{journal: &memJournal{}, reg: prometheus.NewPedanticRegistry(), logs: &logSink{},
		clock: clock.NewFake(time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC))}
	tel := telemetry.MustNew(telemetry.Config{Registerer: f.reg, Clock: f.clock})
	f.history = admin.MustNewHistory(admin.HistoryConfig{})
	f.deps = dependencymap.MustNew(dependencymap.Config{
		Clock:         f.clock,
		PolicyVersion: "ops-1",
		Dependencies: map[string]dependencymap.Dependency{
			"crm":    {Tools: []string{"lookup_customer", "update_customer"}},
			"search": {Tools: []string{"web_search"}, Policy: breaker.Policy{MinimumCalls: 1, Jitter: -1}},
		},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent, f.history.Record},
	})
	tel.Watch(f.deps)
	f.clock.Advance(time.Second)
	search, _ := f.deps.Get("search")
	p, err := search.Allow()
	require.NoError(t, err)
	p.Failure()
	require.Equal(t, breaker.Open, search.State())

	f.journal.intents = []admin.Intent{
		{ID: "int-1", Dependency: "crm", Tool: "update_customer", RequestID: "e-1", Attempt: 1, CreatedAt: f.clock.Now(), Summary: "set tier of customer 42 to gold"},
		{ID: "int-2", Dependency: "crm", Tool: "update_customer", RequestID: "e-2", Attempt: 2, CreatedAt: f.clock.Now(), Summary: "close ticket 7"},
	}
	cfg := admin.Config{
		Token:     token,
		Breakers:  f.deps,
		Bulkheads: staticBulkheads{{Dependency: "crm", InFlight: 3, Limit: 8, Waiting: 1}},
		Routes:    staticRoutes{{Model: "gemini-2.5-pro", Region: "us-central1", Primary: true}, {Model: "gemini-2.5-pro", Region: "europe-west4", Serving: true}},
		Journal:   f.journal,
		History:   f.history,
		Refresh:   time.Second,
		Logger:    slog.New(slog.NewJSONHandler(f.logs, nil)),
		Clock:     f.clock,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	h, err := admin.New(cfg)
	require.NoError(t, err)
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

type request struct {
	method, path string
	header       map[string]string
	body         string
}

// do sends r with the right token unless r.header sets Authorization (to "" for none).
func (f *fixture) do(t *testing.T, r request) (int, http.Header, string) {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), r.method, f.srv.URL+r.path, body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if r.method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header, string(raw)
}

func (f *fixture) breaker(t *testing.T, name string) *breaker.Breaker {
	t.Helper()
	b, ok := f.deps.Get(name)
	require.True(t, ok)
	return b
}
