package journal_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild() // the crash test's child process: writes until it is killed
		return
	}
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/agentbreaker/agentbreaker/clock.(*coarse).tick"))
}
