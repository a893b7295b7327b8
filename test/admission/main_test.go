package admission_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

// The clock package's coarse ticker is process-wide and stops itself after a second
// without readers; it is not a leak of the code under test.
func TestMain(m *testing.M) {
	leakcheck.Main(m)
}
