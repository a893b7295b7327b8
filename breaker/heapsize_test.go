package breaker_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/internal/breakersize"
)

// TestBreakerFitsInOneKiB (issue 32d) measures a breaker rather than adding up its
// parts: the heap growth over breakersize.N breakers built with breaker.MustNew, for
// the default window and for a 100-call count window, each in a fresh process (this
// test binary, run again for this test alone), before and after one call each. Under
// 1 KiB each. docs/benchmarks.md quotes the same measurement
// (go run ./internal/breakersize/cmd).
func TestBreakerFitsInOneKiB(t *testing.T) {
	if breakersize.RunChild(os.Stdout) {
		return
	}
	if testing.Short() {
		t.Skip("builds 10,000 breakers in two child processes")
	}
	rs, err := breakersize.MeasureFresh(func() *exec.Cmd {
		return exec.Command(os.Args[0], "-test.run=^TestBreakerFitsInOneKiB$", "-test.count=1")
	})
	require.NoError(t, err)
	require.Len(t, rs, len(breakersize.Windows))
	for _, r := range rs {
		t.Logf("%s: %.1f bytes per breaker built, %.1f after one call each", r.Window, r.Built, r.Called)
		require.Positive(t, r.Built, "%s: a measurement that saw nothing", r.Window)
		require.Less(t, r.Built, 1024.0, "%s: built", r.Window)
		require.Less(t, r.Called, 1024.0, "%s: after one call each", r.Window)
	}
}
