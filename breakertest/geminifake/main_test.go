package geminifake_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must leave no goroutine behind: held requests, streams and servers
// all end with the test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/agentbreaker/agentbreaker/clock.(*coarse).tick"))
}
