package a2aguard_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

// TestMain fails the tests if any goroutine outlives them: a request the guard bounded
// must not leave a stream reader or a hanging exchange behind.
func TestMain(m *testing.M) { leakcheck.Main(m) }
