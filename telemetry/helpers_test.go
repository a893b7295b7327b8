package telemetry_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// logSink is an io.Writer safe for the concurrent writes of a slog handler.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// records decodes every JSON record written so far.
func (s *logSink) records(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "log line %q", sc.Text())
		out = append(out, m)
	}
	return out
}

// withMsg returns the records whose message is msg.
func (s *logSink) withMsg(t *testing.T, msg string) []map[string]any {
	var out []map[string]any
	for _, r := range s.records(t) {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

type fixture struct {
	reg   *prometheus.Registry
	tel   *telemetry.Telemetry
	clock *clock.Fake
	logs  *logSink
}

var start = time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)

// newFixture builds a Telemetry on a fresh registry with a fake clock and a JSON logger
// that keeps debug records.
func newFixture(t *testing.T, mutate ...func(*telemetry.Config)) *fixture {
	t.Helper()
	f := &fixture{reg: prometheus.NewPedanticRegistry(), clock: clock.NewFake(start), logs: &logSink{}}
	cfg := telemetry.Config{
		Registerer:      f.reg,
		Clock:           f.clock,
		Logger:          slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		DurationBuckets: []float64{0.1, 1},
	}
	for _, m := range mutate {
		m(&cfg)
	}
	tel, err := telemetry.New(cfg)
	require.NoError(t, err)
	f.tel = tel
	return f
}

// compare checks the exposition of the named metrics and that the registry lints clean.
func (f *fixture) compare(t *testing.T, want string, names ...string) {
	t.Helper()
	require.NoError(t, testutil.CollectAndCompare(f.tel, bytes.NewBufferString(want), names...))
	problems, err := testutil.GatherAndLint(f.reg)
	require.NoError(t, err)
	require.Empty(t, problems)
}
