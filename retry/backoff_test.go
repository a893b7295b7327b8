package retry_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/stretchr/testify/require"
)

func TestBackoff(t *testing.T) {
	const base, maxDelay = 100 * time.Millisecond, 10 * time.Second
	tests := []struct {
		name string
		n    int
		u    float64
		want time.Duration
	}{
		{"first retry, top of range", 0, 0.999999999, 99999999},
		{"first retry, middle", 0, 0.5, 50 * time.Millisecond},
		{"doubles per attempt", 3, 0.5, 400 * time.Millisecond},
		{"zero draw waits nothing", 5, 0, 0},
		{"capped", 10, 0.5, 5 * time.Second},
		{"huge exponent does not overflow", 1000, 0.5, 5 * time.Second},
		{"exponent 62 does not overflow", 62, 0.5, 5 * time.Second},
		{"negative attempt uses the cap", -1, 0.5, 5 * time.Second},
		{"draw of one is the ceiling", 1, 1, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, retry.Backoff(tt.n, base, maxDelay, tt.u))
		})
	}
}

func TestBackoffIsFullJitter(t *testing.T) {
	// Every draw lands in [0, min(cap, base·2^n)), and the draws cover the range: the
	// mean of evenly spread draws is half the ceiling.
	for n := range 8 {
		ceiling := min(10*time.Second, 100*time.Millisecond<<n)
		var sum float64
		const draws = 1000
		for i := range draws {
			u := (float64(i) + 0.5) / draws
			d := retry.Backoff(n, 100*time.Millisecond, 10*time.Second, u)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.Less(t, d, ceiling)
			sum += float64(d)
		}
		require.InDelta(t, float64(ceiling)/2, sum/draws, float64(ceiling)*0.01)
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name    string
		p       retry.Policy
		wantErr string
	}{
		{"defaults", retry.Policy{}, ""},
		{"one attempt", retry.Policy{MaxAttempts: 1}, ""},
		{"negative attempts", retry.Policy{MaxAttempts: -1}, "retry: Policy.MaxAttempts = -1: must be between 1 and 100"},
		{"too many attempts", retry.Policy{MaxAttempts: 101}, "Policy.MaxAttempts = 101"},
		{"tiny deadline", retry.Policy{Deadline: time.Microsecond}, "Policy.Deadline = 1µs"},
		{"negative base", retry.Policy{BaseDelay: -time.Second}, "Policy.BaseDelay = -1s"},
		{"cap below base", retry.Policy{BaseDelay: 2 * time.Second, MaxDelay: time.Second}, "Policy.MaxDelay = 1s: must be between BaseDelay (2s) and 1h"},
		{"base above default cap raises it", retry.Policy{BaseDelay: 20 * time.Second}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.WithDefaults().Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			var ce *retry.ConfigError
			require.True(t, errors.As(err, &ce))
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     retry.Config
		wantErr string
	}{
		{"bad policy", retry.Config{Policy: retry.Policy{MaxAttempts: 500}}, "Policy.MaxAttempts = 500"},
		{"nil hook", retry.Config{OnAttempt: []func(context.Context, retry.Event){nil}}, "OnAttempt[0] = nil"},
		{"negative operations", retry.Config{MaxOperationsPerInvocation: -2}, "MaxOperationsPerInvocation = -2"},
		{"negative invocations", retry.Config{MaxInvocations: -2}, "MaxInvocations = -2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := retry.New(tt.cfg)
			require.ErrorContains(t, err, tt.wantErr)
			require.Panics(t, func() { retry.MustNew(tt.cfg) })
		})
	}
}

func TestBudgetConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     retry.BudgetConfig
		wantErr string
	}{
		{"defaults", retry.BudgetConfig{}, ""},
		{"ratio above one", retry.BudgetConfig{Ratio: 1.5}, "Budget.Ratio = 1.5: must be in (0, 1]"},
		{"negative ratio", retry.BudgetConfig{Ratio: -0.1}, "Budget.Ratio = -0.1"},
		{"NaN ratio", retry.BudgetConfig{Ratio: math.NaN()}, "Budget.Ratio = NaN"},
		{"huge floor", retry.BudgetConfig{MinRetriesPerSecond: 5000}, "Budget.MinRetriesPerSecond = 5000"},
		{"short window", retry.BudgetConfig{Window: time.Millisecond}, "Budget.Window = 1ms"},
		{"negative cap", retry.BudgetConfig{MaxDependencies: -1}, "Budget.MaxDependencies = -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := retry.NewBudget(tt.cfg)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			_, err = retry.NewBudgets(tt.cfg)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
