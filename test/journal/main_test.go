package journal_test

import (
	"os"
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild() // the crash test's child process: writes until it is killed
		return
	}
	leakcheck.Main(m)
}
