package dependencymap_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

func TestAddToolsPutsListedToolsUnderOneKey(t *testing.T) {
	t.Parallel()
	m := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{
			"payments": {Policy: breaker.Policy{MinimumCalls: 2, Jitter: -1}},
			"crm":      {Tools: []string{"lookup_customer"}},
		},
		ExemptTools: []string{"transfer_to_agent"},
	})
	require.NoError(t, m.AddTools("payments", "charge_card", "refund"))
	for _, tool := range []string{"charge_card", "refund"} {
		key, ok := m.DependencyOf(tool)
		require.True(t, ok)
		require.Equal(t, "payments", key)
		p, err := must(m.ForTool(tool)).Allow()
		require.NoError(t, err)
		p.Failure()
	}
	b, _ := m.Get("payments")
	require.Equal(t, breaker.Open, b.State(), "two tools of one key trip its one breaker")
	require.Equal(t, []string{"charge_card", "refund"}, m.Tools("payments"))

	// The list grew: the new name joins the same key; the old ones stay.
	require.NoError(t, m.AddTools("payments", "charge_card", "refund", "void"))
	require.Same(t, b, must(m.ForTool("void")))

	err := m.AddTools("payments", "lookup_customer", "transfer_to_agent", "capture")
	require.ErrorIs(t, err, dependencymap.ErrToolBound)
	require.ErrorContains(t, err, `tool "lookup_customer" is under dependency "crm"`)
	require.ErrorContains(t, err, `tool "transfer_to_agent" is in ExemptTools`)
	key, _ := m.DependencyOf("lookup_customer")
	require.Equal(t, "crm", key, "a configured name is never moved")
	require.True(t, m.Exempt("transfer_to_agent"))
	require.Same(t, b, must(m.ForTool("capture")), "the other names are added")

	require.ErrorIs(t, m.AddTools("other", "refund"), dependencymap.ErrToolBound, "AddTools binds as firmly as the configuration")
}

func TestAddToolsCreatesKeyAndTakesOverRememberedNames(t *testing.T) {
	t.Parallel()
	m := dependencymap.MustNew(dependencymap.Config{MaxDependencies: 2})
	seen := must(m.ForTool("search")) // an unannotated name, remembered with its own key
	require.Equal(t, "search", seen.Name())
	require.NoError(t, m.AddTools("docs", "search"))
	b, ok := m.Get("docs")
	require.True(t, ok)
	require.Same(t, b, must(m.ForTool("search")))
	require.Equal(t, b.Policy(), dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{"x": {}}}).Breakers()[0].Policy(),
		"a key created on demand gets the default policy")
	require.ErrorIs(t, m.AddTools("third"), dependencymap.ErrTooManyDependencies)
}

func TestAddToolsRejectsBadNames(t *testing.T) {
	t.Parallel()
	m := dependencymap.MustNew(dependencymap.Config{})
	tests := []struct {
		name    string
		key     string
		tools   []string
		wantErr string
	}{
		{"empty key", "", nil, `AddTools: dependency key "" is empty`},
		{"empty tool", "payments", []string{"a", ""}, `AddTools("payments"): tools[1] = "": tool name is empty`},
		{"invalid utf-8", "payments", []string{"\xff"}, `tools[0]`},
		{"bad key", "pay\nments", nil, `AddTools key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorContains(t, m.AddTools(tt.key, tt.tools...), tt.wantErr)
		})
	}
}

func TestAddToolsConcurrentWithLookups(t *testing.T) {
	t.Parallel()
	m := dependencymap.MustNew(dependencymap.Config{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			names := []string{"a", "b", "c"}[:1+i%3]
			for range 100 {
				if err := m.AddTools("svc", names...); err != nil {
					t.Error(err)
					return
				}
				if b, err := m.ForTool("a"); err != nil || b.Name() != "svc" {
					t.Errorf("ForTool(a) = %v, %v", b, err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, []string{"a", "b", "c"}, m.Tools("svc"))
}

func TestAddToolsKnownNamesAllocateNothing(t *testing.T) {
	m := dependencymap.MustNew(dependencymap.Config{})
	names := []string{"charge_card", "refund"}
	require.NoError(t, m.AddTools("payments", names...))
	if n := testing.AllocsPerRun(100, func() {
		if err := m.AddTools("payments", names...); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("AddTools of known names allocates %.0f times, want 0", n)
	}
}

func must(b *breaker.Breaker, err error) *breaker.Breaker {
	if err != nil {
		panic(errors.Join(errors.New("must"), err))
	}
	return b
}
