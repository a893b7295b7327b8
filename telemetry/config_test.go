package telemetry_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	reg := func() prometheus.Registerer { return prometheus.NewRegistry() }
	tests := []struct {
		name    string
		cfg     telemetry.Config
		wantErr string
	}{
		{name: "defaults", cfg: telemetry.Config{Registerer: reg()}},
		{name: "no registerer", cfg: telemetry.Config{}, wantErr: "telemetry: Registerer = nil: is required"},
		{name: "negative label cap", cfg: telemetry.Config{Registerer: reg(), MaxLabelValues: -1}, wantErr: "telemetry: MaxLabelValues = -1: must be positive"},
		{name: "negative series budget", cfg: telemetry.Config{Registerer: reg(), MaxSeries: -5}, wantErr: "telemetry: MaxSeries = -5: must be positive"},
		{name: "empty buckets", cfg: telemetry.Config{Registerer: reg(), DurationBuckets: []float64{}}, wantErr: "telemetry: DurationBuckets = []: must hold at least one bound"},
		{name: "unordered buckets", cfg: telemetry.Config{Registerer: reg(), DurationBuckets: []float64{1, 0.5}}, wantErr: "telemetry: DurationBuckets[1] = 0.5: must be positive"},
		{name: "NaN bucket", cfg: telemetry.Config{Registerer: reg(), DurationBuckets: []float64{math.NaN()}}, wantErr: "telemetry: DurationBuckets[0] = NaN"},
		{name: "infinite bucket", cfg: telemetry.Config{Registerer: reg(), DurationBuckets: []float64{1, math.Inf(1)}}, wantErr: "telemetry: DurationBuckets[1] = +Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tel, err := telemetry.New(tt.cfg)
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.NotNil(t, tel)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			require.ErrorIs(t, err, telemetry.ErrConfig)
			var ce *telemetry.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Panics(t, func() { telemetry.MustNew(tt.cfg) })
		})
	}
}

func TestRegisteringTwiceOnOneRegistryFails(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	first := telemetry.MustNew(telemetry.Config{Registerer: reg})
	_, err := telemetry.New(telemetry.Config{Registerer: reg})
	var already prometheus.AlreadyRegisteredError
	require.ErrorAs(t, err, &already)
	require.True(t, first.Unregister())
	_, err = telemetry.New(telemetry.Config{Registerer: reg})
	require.NoError(t, err, "after Unregister the names are free again")
}

func TestNilTelemetryIsANoOp(t *testing.T) {
	t.Parallel()
	var tel *telemetry.Telemetry
	ctx := context.Background()
	require.NotPanics(t, func() {
		tel.BreakerEvent(breaker.Event{Breaker: "crm"})
		tel.ShortCircuit(ctx, observe.ShortCircuit{})
		tel.CallOutcome(ctx, observe.Call{})
		tel.BulkheadRejected(ctx, "crm")
		tel.RetryBudgetExhausted(ctx, "crm")
		tel.Failover(ctx, observe.Failover{})
		tel.RouteServing("m", "r")
		tel.FallbackShare(0.5)
		tel.JournalPending(1, time.Time{})
		tel.Watch(nil)
		require.False(t, tel.Unregister())
	})
}

func TestErrorsNameTheField(t *testing.T) {
	t.Parallel()
	_, err := telemetry.New(telemetry.Config{Registerer: prometheus.NewRegistry(), MaxLabelValues: -3})
	require.True(t, errors.Is(err, telemetry.ErrConfig))
	var ce *telemetry.ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "MaxLabelValues", ce.Field)
	require.True(t, strings.HasPrefix(err.Error(), "telemetry: MaxLabelValues = -3"))
}
