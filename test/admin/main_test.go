package admin_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

func TestMain(m *testing.M) {
	// The system clock's coarse ticker stops by itself after a second without readers.
	leakcheck.Main(m)
}
