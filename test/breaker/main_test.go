// Package breaker_test holds black-box tests of the breaker and clock packages: they
// are written from the packages' documentation (go doc, docs/breaker.md) only, to
// check its promises independently of the implementation.
package breaker_test

import (
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

// The clock package's coarse ticker is process-wide and stops itself after a second
// without readers; it is not a leak of the code under test.
func TestMain(m *testing.M) {
	leakcheck.Main(m)
}

// pollBound bounds every wait of these tests on the real clock. It only turns a lost
// wake-up into a failure; nothing is timed against it.
const pollBound = 5 * time.Second
