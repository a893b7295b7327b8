// Package throttle_test checks, from the outside, what docs/partial-outages.md promises
// about the throttle (package throttle, set with dependencymap.Dependency.Throttle),
// through adk-go's runner against a local server that fails a share of its calls.
package throttle_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

func TestMain(m *testing.M) {
	leakcheck.Main(m)
}
