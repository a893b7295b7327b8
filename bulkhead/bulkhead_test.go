package bulkhead_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/bulkhead"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
)

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     bulkhead.Config
		wantErr string
	}{
		{"no name", bulkhead.Config{Limit: 1}, `bulkhead: Config.Name = "": required`},
		{"zero limit", bulkhead.Config{Name: "crm"}, "bulkhead: Config.Limit = 0: must be between 1 and 1000000 (bulkhead crm)"},
		{"huge limit", bulkhead.Config{Name: "crm", Limit: 2_000_000}, "Config.Limit = 2000000"},
		{"negative sustained", bulkhead.Config{Name: "crm", Limit: 1, SustainedRejections: -1}, "Config.SustainedRejections = -1"},
		{"tiny window", bulkhead.Config{Name: "crm", Limit: 1, SustainedWindow: time.Millisecond}, "Config.SustainedWindow = 1ms: must be between 1s and 1h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := bulkhead.New(tt.cfg)
			require.Nil(t, b)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	require.Panics(t, func() { bulkhead.MustNew(bulkhead.Config{}) })
}

func TestAcquireReleaseAndReject(t *testing.T) {
	t.Parallel()
	b := bulkhead.MustNew(bulkhead.Config{Name: "crm", Limit: 2})
	require.NoError(t, b.TryAcquire())
	require.NoError(t, b.TryAcquire())
	err := b.TryAcquire()
	require.ErrorIs(t, err, bulkhead.ErrFull)
	require.EqualError(t, err, "bulkhead: crm is full (2 calls in progress)")
	c := classify.Error(context.Background(), err)
	require.Equal(t, classify.ClassBulkheadFull, c.Class)
	require.Equal(t, classify.FailedBeforeSend, c.Outcome)
	require.Equal(t, 2, b.InUse())
	require.True(t, b.Release())
	require.True(t, b.Release())
	require.False(t, b.Release(), "a release without an acquire changes nothing")
	require.Equal(t, 0, b.InUse())
	require.NoError(t, b.TryAcquire(), "the limit was not raised by the stray release")
	require.NoError(t, b.TryAcquire())
	require.Error(t, b.TryAcquire())
	s := b.Snapshot()
	require.Equal(t, bulkhead.Snapshot{Name: "crm", Limit: 2, InUse: 2, Acquired: 4, Rejected: 2}, s)
}

func TestSustainedRejectionsAreFlaggedOncePerWindow(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Time{})
	b := bulkhead.MustNew(bulkhead.Config{Name: "crm", Limit: 1, SustainedRejections: 3, SustainedWindow: time.Minute, Clock: clk})
	require.NoError(t, b.TryAcquire())
	sustained := func() []bool {
		var out []bool
		for range 5 {
			var fe *bulkhead.FullError
			require.True(t, errors.As(b.TryAcquire(), &fe))
			out = append(out, fe.Sustained)
		}
		return out
	}
	require.Equal(t, []bool{false, false, true, false, false}, sustained())
	clk.Advance(59 * time.Second)
	require.Equal(t, []bool{false, false, false, false, false}, sustained(), "same window: already reported")
	clk.Advance(time.Second)
	require.Equal(t, []bool{false, false, true, false, false}, sustained(), "a new window reports again")
}

func TestNeverMoreThanTheLimitInProgress(t *testing.T) {
	t.Parallel()
	const limit = 3
	b := bulkhead.MustNew(bulkhead.Config{Name: "crm", Limit: limit})
	var inside, peak, lost atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 2000 {
				if b.TryAcquire() != nil {
					continue
				}
				n := inside.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				inside.Add(-1)
				if !b.Release() {
					lost.Add(1)
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, peak.Load(), int64(limit))
	require.Zero(t, lost.Load())
	require.Equal(t, 0, b.InUse())
	s := b.Snapshot()
	require.Equal(t, int64(16*2000), s.Acquired+s.Rejected)
}

func TestGroup(t *testing.T) {
	t.Parallel()
	g := bulkhead.MustNewGroup(bulkhead.GroupConfig{Limits: map[string]int{"crm": 2}, Default: 5, MaxBulkheads: 2})
	crm, err := g.For("crm")
	require.NoError(t, err)
	require.Equal(t, 2, crm.Limit())
	w, err := g.For("weather")
	require.NoError(t, err)
	require.Equal(t, 5, w.Limit())
	again, _ := g.For("weather")
	require.Same(t, w, again)
	_, err = g.For("maps")
	require.NoError(t, err)
	_, err = g.For("fourth")
	require.ErrorIs(t, err, bulkhead.ErrTooManyBulkheads)
	require.NoError(t, crm.TryAcquire())
	require.NoError(t, w.TryAcquire())
	require.Equal(t, 2, g.InUse())
	var names []string
	for _, b := range g.Bulkheads() {
		names = append(names, b.Name())
	}
	require.Equal(t, []string{"crm", "maps", "weather"}, names)

	unlimited := bulkhead.MustNewGroup(bulkhead.GroupConfig{Limits: map[string]int{"crm": 1}})
	b, err := unlimited.For("other")
	require.NoError(t, err)
	require.Nil(t, b, "no default: other dependencies are unlimited")
}

func TestGroupConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     bulkhead.GroupConfig
		wantErr string
	}{
		{"bad limit", bulkhead.GroupConfig{Limits: map[string]int{"crm": 0}}, `bulkhead: GroupConfig.Limits["crm"] = 0: must be between 1 and 1000000`},
		{"empty key", bulkhead.GroupConfig{Limits: map[string]int{"": 3}}, `GroupConfig.Limits[""] = 3: dependency key is empty`},
		{"negative default", bulkhead.GroupConfig{Default: -1}, "GroupConfig.Default = -1"},
		{"negative cap", bulkhead.GroupConfig{MaxBulkheads: -1}, "GroupConfig.MaxBulkheads = -1"},
		{"bad window", bulkhead.GroupConfig{Default: 3, SustainedWindow: 2 * time.Hour}, "bulkhead: GroupConfig.SustainedWindow = 2h0m0s: must be between 1s and 1h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := bulkhead.NewGroup(tt.cfg)
			require.Nil(t, g)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
