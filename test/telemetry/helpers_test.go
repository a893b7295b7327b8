package telemetry_test

import (
	"bytes"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

func TestMain(m *testing.M) {
	// The system clock's coarse ticker stops by itself after a second without readers.
	leakcheck.Main(m)
}

// The fixture below is the library's telemetry test fixture (telemetry/helpers_test.go),
// less its log capture, which the tests here do not read.

// fixture is a Telemetry on a fresh registry.
type fixture struct {
	reg *prometheus.Registry
	tel *telemetry.Telemetry
}

var start = time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)

// newFixture builds a Telemetry on a fresh registry with a fake clock and a JSON logger
// that writes debug records (to nowhere here).
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{reg: prometheus.NewPedanticRegistry()}
	tel, err := telemetry.New(telemetry.Config{
		Registerer:      f.reg,
		Clock:           clock.NewFake(start),
		Logger:          slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})),
		DurationBuckets: []float64{0.1, 1},
	})
	require.NoError(t, err)
	f.tel = tel
	return f
}

// compare checks the named metrics against want, and lints the registry.
func (f *fixture) compare(t *testing.T, want string, names ...string) {
	t.Helper()
	require.NoError(t, testutil.CollectAndCompare(f.tel, bytes.NewBufferString(want), names...))
	problems, err := testutil.GatherAndLint(f.reg)
	require.NoError(t, err)
	require.Empty(t, problems)
}
