package mcpguard_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
	"github.com/agentbreaker/agentbreaker/internal/mcptest"
)

// TestMain serves the MCP fixture over stdio when the binary runs as a child of the
// stdio tests, and otherwise fails the tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	mcptest.ServeStdioIfChild()
	leakcheck.Main(m)
}
