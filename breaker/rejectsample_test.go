package breaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Rejections came back to their speed before collision detection (issue 25 g): one in
// rejectionSample writes the stripes, counting rejectionSample, so the stripes still
// count about one per rejection (for the coarse clock's refreshes) and a write is still
// a compare-and-swap that sees a collision, while the other rejections write nothing.
func TestRejectionsWriteTheStripesOneTimeInSixteen(t *testing.T) {
	b := MustNew(Config{Name: "sampled", Policy: Policy{MinimumCalls: 1, Cooldown: time.Hour}}) // the default clock
	call(t, b, Failure)
	require.Equal(t, Open, b.State())
	const n = 64 * rejectionSample * 16
	for range n {
		_, err := b.Allow()
		require.ErrorIs(t, err, ErrOpen)
	}
	var sum int64
	for i := range stripeCount {
		c := b.stripes.at(i).Load() & countMask
		require.Zero(t, c%rejectionSample, "stripe %d: each write counts rejectionSample", i)
		sum += c
	}
	require.InDelta(t, n, sum, n/4, "about one count per rejection")
	writes := sum / rejectionSample
	require.InDelta(t, n/rejectionSample, writes, n/rejectionSample/4, "about one write per %d rejections", rejectionSample)
}
