// The tests here are the callbacks tests that need a journal on a real database. They
// run the library's callbacks tests' fixture, internal/callbackstest.

package callbacks_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

func TestMain(m *testing.M) {
	leakcheck.Main(m)
}
