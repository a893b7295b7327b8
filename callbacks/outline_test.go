package callbacks_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/callbacks"
)

// TestConfigIsAnOutline (issue 32e): the top level of Config stays short enough to
// hold in mind; related settings live in sub-structs (Guidance, SideEffects,
// Bulkheads, Model, Observability).
func TestConfigIsAnOutline(t *testing.T) {
	typ := reflect.TypeFor[callbacks.Config]()
	var names []string
	for f := range typ.Fields() {
		names = append(names, f.Name)
	}
	require.LessOrEqual(t, len(names), 15, "callbacks.Config's top-level fields: %v", names)
	g := reflect.TypeFor[callbacks.Guidance]()
	for _, f := range []string{"Cache", "Alternatives", "Fallback", "Redaction", "LoopGuard", "Docstring", "DisableDocstrings"} {
		_, ok := g.FieldByName(f)
		require.True(t, ok, "Guidance.%s", f)
		_, top := typ.FieldByName(f)
		require.False(t, top, "%s lives in Guidance only: no alias at the top level", f)
	}
}
