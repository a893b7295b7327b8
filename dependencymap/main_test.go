package dependencymap

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

// TestMain fails the package's tests if any goroutine outlives them, except the coarse
// clock's ticker, which stops by itself a second after its last reader.
func TestMain(m *testing.M) {
	leakcheck.Main(m)
}
