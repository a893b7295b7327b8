package breaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Regression: on the system clock, a half-open breaker with a free probe slot and no
// probe in flight stores the "no probe busy" sentinel (MinInt64); the fast path
// subtracted the time from it, which overflowed to a large positive wait, so every
// further probe was rejected: with HalfOpenProbes 2 the second probe never went.
func TestSecondProbeGoesOnTheSystemClock(t *testing.T) {
	b := MustNew(Config{Name: "dep", Policy: Policy{
		MinimumCalls: 1, Cooldown: 10 * time.Millisecond, Jitter: -1, HalfOpenProbes: 2,
	}})
	p, err := b.Allow()
	require.NoError(t, err)
	p.Failure()
	require.Equal(t, Open, b.State())
	deadline := time.Now().Add(5 * time.Second)
	var first Permit
	for {
		if first, err = b.Allow(); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "no first probe")
		time.Sleep(time.Millisecond)
	}
	require.True(t, first.IsProbe())
	second, err := b.Allow()
	require.NoError(t, err, "the second probe slot is free")
	require.True(t, second.IsProbe())
	first.Success()
	second.Success()
	require.Equal(t, Closed, b.State())
}
