package fleet_test

import (
	"os"
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		replicaChild() // a replica process of the multi-process tests
		return
	}
	leakcheck.Main(m)
}
