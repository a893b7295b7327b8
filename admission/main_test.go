package admission_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The clock package's coarse ticker is process-wide and stops itself after a second
// without readers; it is not a leak of the code under test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/agentbreaker/agentbreaker/clock.(*coarse).tick"))
}
