package dependencymap

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them, except the coarse
// clock's ticker, which stops by itself a second after its last reader.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/agentbreaker/agentbreaker/clock.(*coarse).tick"))
}
