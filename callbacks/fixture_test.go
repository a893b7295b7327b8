package callbacks_test

import (
	"errors"
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
)

// The fixture these tests run (an agent guarded by agentbreaker, through the real
// runner) is in internal/callbackstest, shared with the test module's callbacks tests.

func TestMain(m *testing.M) {
	leakcheck.Main(m)
}

var errBoom = errors.New("upstream exploded")

func agentConfig(name string, m model.LLM, tools ...tool.Tool) llmagent.Config {
	return llmagent.Config{Name: name, Model: m, Tools: tools}
}

// harnessWith runs an agent with tools behind cb's plugin.
func harnessWith(t *testing.T, cb *callbacks.Callbacks, m model.LLM, tools ...tool.Tool) *breakertest.Harness {
	t.Helper()
	a, err := llmagent.New(agentConfig("root", m, tools...))
	require.NoError(t, err)
	return breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}})
}
