package otelmetrics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// limitList is a LimitSource of its own limiters, in order.
type limitList []*adaptivelimit.Limiter

func (l limitList) Limiters() []*adaptivelimit.Limiter { return l }

// TestLimitsPastTheBudgetFoldIntoOther: each adaptive limit costs seven series of the
// budget (limit, floor, no-load latency, four priorities' refusals); a limit named
// "other", one whose sanitised name repeats an earlier one and those past the budget
// are reported together as dependency="other" (the lowest limit and floor, the
// highest no-load latency, the refusals summed), and a name a later source lists
// again is skipped. A second collection charges nothing more.
func TestLimitsPastTheBudgetFoldIntoOther(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	cfg := otelmetrics.Config{Clock: clk, MaxSeries: 3 * 7}
	m, reader := newMetrics(t, cfg)
	limiter := func(name string, floor, initial int) *adaptivelimit.Limiter {
		return adaptivelimit.MustNew(adaptivelimit.Config{Name: name, MinLimit: floor, InitialLimit: initial,
			MinSamples: 1, UpdateInterval: time.Millisecond, Clock: clk})
	}
	crm, named, dup, dupAgain, mail, search := limiter("crm\x00", 1, 5), limiter("other", 2, 9),
		limiter("dup\x01", 3, 3), limiter("dup\x02", 1, 2), limiter("mail", 1, 6), limiter("search", 4, 4)

	// named measures a no-load latency of 300 ms (its limit, less than half used,
	// stays 9); dupAgain, full, refuses a low and a high call.
	p, err := named.AcquireAt(epoch, throttle.Normal)
	require.NoError(t, err)
	p.DoneAt(epoch.Add(300 * time.Millisecond))
	require.Equal(t, 300*time.Millisecond, named.NoLoad())
	for range 2 {
		_, err := dupAgain.Acquire(throttle.Critical)
		require.NoError(t, err)
	}
	for _, pr := range []throttle.Priority{throttle.Low, throttle.High} {
		_, err := dupAgain.Acquire(pr)
		require.ErrorIs(t, err, adaptivelimit.ErrLimited)
	}

	m.WatchLimits(limitList{crm, named, dup, dupAgain, mail, search})
	m.WatchLimits(limitList{limiter("mail", 50, 50)}) // listed already: skipped
	for range 2 {
		c := collect(t, reader)
		require.Equal(t, map[string]float64{"dependency=crm\uFFFD": 5, "dependency=dup\uFFFD": 3, "dependency=mail": 6, "dependency=other": 2},
			c.points(t, "agentbreaker.adaptive_limit"))
		require.Equal(t, map[string]float64{"dependency=crm\uFFFD": 1, "dependency=dup\uFFFD": 3, "dependency=mail": 1, "dependency=other": 1},
			c.points(t, "agentbreaker.adaptive_limit.min"))
		require.Equal(t, 0.3, c.points(t, "agentbreaker.adaptive_limit.no_load")["dependency=other"])
		refused := c.points(t, "agentbreaker.adaptive_limit.refused")
		require.Len(t, refused, 4*4)
		for pr, want := range map[string]float64{"low": 1, "normal": 0, "high": 1, "critical": 0} {
			require.Equal(t, want, refused["dependency=other,priority="+pr], pr)
		}
		require.LessOrEqual(t, c.promSeries(), cfg.SeriesBound())
	}
}
