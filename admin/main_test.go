package admin_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The system clock's coarse ticker stops by itself after a second without readers.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/agentbreaker/agentbreaker/clock.(*coarse).tick"))
}
