package openaifake_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

// Every test must leave no goroutine behind: held requests, streams and servers
// all end with the test.
func TestMain(m *testing.M) {
	leakcheck.Main(m)
}
