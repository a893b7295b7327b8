package dependencymap

import (
	"fmt"
	"github.com/agentbreaker/agentbreaker"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/stretchr/testify/require"
)

func crmConfig() Config {
	return Config{
		Dependencies: map[string]Dependency{
			"crm": {Tools: []string{"lookup_customer", "update_customer", "list_orders"}, Hosts: []string{"crm.internal"},
				Policy: breaker.Policy{MinimumCalls: 3, Jitter: -1}},
		},
		ExemptTools: []string{"transfer_to_agent"},
		Clock:       clock.NewFake(time.Time{}),
	}
}

func TestToolsOnOneDependencyTripTogether(t *testing.T) {
	t.Parallel()
	m := MustNew(crmConfig())
	for _, tool := range []string{"lookup_customer", "update_customer", "list_orders"} {
		b, err := m.ForTool(tool)
		require.NoError(t, err)
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	for _, tool := range []string{"lookup_customer", "update_customer", "list_orders"} {
		b, err := m.ForTool(tool)
		require.NoError(t, err)
		require.Equal(t, breaker.Open, b.State(), tool)
		require.Equal(t, "crm", b.Name())
	}
	key, ok := m.DependencyOf("update_customer")
	require.True(t, ok)
	require.Equal(t, "crm", key)
	require.Equal(t, []string{"list_orders", "lookup_customer", "update_customer"}, m.Tools("crm"))
	require.Same(t, m.ForHost("crm.internal"), must(m.ForTool("lookup_customer")))
	require.Nil(t, m.ForHost("unknown.example"))
}

func must(b *breaker.Breaker, err error) *breaker.Breaker {
	if err != nil {
		panic(err)
	}
	return b
}

func TestUnannotatedTools(t *testing.T) {
	t.Parallel()
	t.Run("own key by default", func(t *testing.T) {
		m := MustNew(crmConfig())
		a := must(m.ForTool("get_weather"))
		require.Equal(t, "get_weather", a.Name())
		require.Same(t, a, must(m.ForTool("get_weather")), "created once")
		require.NotSame(t, a, must(m.ForTool("get_time")))
		key, ok := m.DependencyOf("never_seen")
		require.True(t, ok)
		require.Equal(t, "never_seen", key)
	})
	t.Run("shared key", func(t *testing.T) {
		cfg := crmConfig()
		cfg.Unannotated, cfg.UnannotatedKey = SharedKey, "misc"
		m := MustNew(cfg)
		a, b := must(m.ForTool("x")), must(m.ForTool("y"))
		require.Same(t, a, b)
		require.Equal(t, "misc", a.Name())
	})
	t.Run("exempt", func(t *testing.T) {
		cfg := crmConfig()
		cfg.Unannotated = Exempt
		m := MustNew(cfg)
		b, err := m.ForTool("x")
		require.NoError(t, err)
		require.Nil(t, b)
		require.True(t, m.Exempt("x"))
		require.False(t, m.Exempt("lookup_customer"))
	})
	t.Run("exempt tools", func(t *testing.T) {
		m := MustNew(crmConfig())
		b, err := m.ForTool("transfer_to_agent")
		require.NoError(t, err)
		require.Nil(t, b)
		require.True(t, m.Exempt("transfer_to_agent"))
		_, ok := m.DependencyOf("transfer_to_agent")
		require.False(t, ok)
	})
}

func TestOnDemandBreakersAreCapped(t *testing.T) {
	t.Parallel()
	cfg := crmConfig()
	cfg.MaxDependencies = 3
	m := MustNew(cfg)
	for i := range 3 {
		_, err := m.ForTool(fmt.Sprintf("invented_%d", i))
		require.NoError(t, err)
	}
	_, err := m.ForTool("invented_3")
	require.ErrorIs(t, err, ErrTooManyDependencies)
	require.ErrorContains(t, err, `tool "invented_3" would be breaker number 4 (MaxDependencies 3)`)
	_, err = m.ForTool("lookup_customer")
	require.NoError(t, err, "configured tools are not affected by the cap")
	_, err = m.ForTool("")
	require.ErrorContains(t, err, "empty")
}

func TestModelEndpoints(t *testing.T) {
	t.Parallel()
	cfg := crmConfig()
	cfg.Models = []ModelEndpoint{{Model: "gemini-2.5-flash", Region: "us-central1", Policy: breaker.Policy{MinimumCalls: 7}}}
	m := MustNew(cfg)
	a := must(m.ForModel("gemini-2.5-flash", "us-central1"))
	require.Equal(t, "gemini-2.5-flash@us-central1", a.Name())
	require.Equal(t, 7, a.Policy().MinimumCalls)
	require.Equal(t, 5*time.Minute, a.Policy().Window, "model defaults are conservative")
	b := must(m.ForModel("gemini-2.5-flash", "europe-west4"))
	require.NotSame(t, a, b, "one breaker per model per region")
	require.Equal(t, 50, b.Policy().MinimumCalls)
	require.Same(t, b, must(m.ForModel("gemini-2.5-flash", "europe-west4")))
	got, ok := m.Get("gemini-2.5-flash@europe-west4")
	require.True(t, ok)
	require.Same(t, b, got)
	require.Equal(t, "gemini-2.5-pro", ModelKey("gemini-2.5-pro", ""))
	_, err := m.ForModel("", "x")
	require.Error(t, err)
	var names []string
	for _, br := range m.Breakers() {
		names = append(names, br.Name())
	}
	require.Equal(t, []string{"crm", "gemini-2.5-flash@europe-west4", "gemini-2.5-flash@us-central1"}, names)
}

func TestPolicyOverridesInheritFieldByField(t *testing.T) {
	t.Parallel()
	m := MustNew(Config{
		PolicyVersion: "v7",
		Default:       breaker.Policy{Cooldown: time.Minute, MinimumCalls: 40},
		Dependencies: map[string]Dependency{
			"a": {Tools: []string{"t"}, Policy: breaker.Policy{MinimumCalls: 5}},
			"b": {Tools: []string{"u"}, Policy: breaker.Policy{Version: "b-special"}},
		},
	})
	a, _ := m.Get("a")
	require.Equal(t, 5, a.Policy().MinimumCalls)
	require.Equal(t, time.Minute, a.Policy().Cooldown, "inherited from the default")
	require.Equal(t, "v7", a.Policy().Version)
	b, _ := m.Get("b")
	require.Equal(t, "b-special", b.Policy().Version)
	require.Equal(t, 40, b.Policy().MinimumCalls)
}

func TestInvalidConfigNamesFieldDependencyAndValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"bad dependency policy", Config{Dependencies: map[string]Dependency{"crm": {Policy: breaker.Policy{Window: 90 * time.Minute}}}},
			`dependencymap: Dependencies["crm"].Policy.Window = 1h30m0s: must be between 1s and 1h`},
		{"bad default", Config{Default: breaker.Policy{FailureRateThreshold: 2}},
			"dependencymap: Default.FailureRateThreshold = 2: must be in (0, 1]"},
		{"bad model default", Config{ModelDefault: breaker.Policy{HalfOpenProbes: 500}},
			"dependencymap: ModelDefault.HalfOpenProbes = 500"},
		{"bad model policy", Config{Models: []ModelEndpoint{{Model: "m", Region: "r", Policy: breaker.Policy{Cooldown: time.Millisecond}}}},
			`dependencymap: Models[0].Policy.Cooldown = 1ms`},
		{"tool twice", Config{Dependencies: map[string]Dependency{"a": {Tools: []string{"t"}}, "b": {Tools: []string{"t"}}}},
			`dependencymap: Dependencies["b"].Tools[0] = t: already listed under dependency "a"`},
		{"empty tool", Config{Dependencies: map[string]Dependency{"a": {Tools: []string{"x", ""}}}},
			`dependencymap: Dependencies["a"].Tools[1] = "": tool name is empty`},
		{"exempt and annotated", Config{ExemptTools: []string{"t"}, Dependencies: map[string]Dependency{"a": {Tools: []string{"t"}}}},
			`dependencymap: Dependencies["a"].Tools[0] = t: also listed in ExemptTools`},
		{"host twice", Config{Dependencies: map[string]Dependency{"a": {Hosts: []string{"h"}}, "b": {Hosts: []string{"h"}}}},
			`dependencymap: Dependencies["b"].Hosts[0] = h: already listed under another dependency`},
		{"empty key", Config{Dependencies: map[string]Dependency{"": {}}}, `Dependencies key = "": dependency key is empty`},
		{"shared without key", Config{Unannotated: SharedKey}, `UnannotatedKey = "": required when Unannotated is shared`},
		{"bad unannotated", Config{Unannotated: 9}, "Unannotated = invalid: must be own_key, shared or exempt, not 9"},
		{"negative cap", Config{MaxDependencies: -1}, "MaxDependencies = -1: must be positive"},
		{"model twice", Config{Models: []ModelEndpoint{{Model: "m"}, {Model: "m"}}}, `Models[1] = m: listed twice`},
		{"empty model", Config{Models: []ModelEndpoint{{Region: "r"}}}, `Models[0].Model = "": model name is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := New(tt.cfg)
			require.Nil(t, m)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	require.Panics(t, func() { MustNew(Config{MaxDependencies: -1}) })
}

func TestConcurrentLookupsAndCreation(t *testing.T) {
	t.Parallel()
	m := MustNew(crmConfig())
	var wg sync.WaitGroup
	seen := make([]*breaker.Breaker, 32)
	for g := range 32 {
		wg.Go(func() {
			for i := range 200 {
				b, err := m.ForTool(fmt.Sprintf("tool_%d", i%50))
				require.NoError(t, err)
				if i == 7 {
					seen[g] = b
				}
				_, err = m.ForModel("m", fmt.Sprintf("r%d", i%5))
				require.NoError(t, err)
				_ = must(m.ForTool("lookup_customer"))
			}
		})
	}
	wg.Wait()
	for _, b := range seen {
		require.Same(t, seen[0], b, "every goroutine got the same breaker for tool_7")
	}
	require.Len(t, m.Breakers(), 1+50+5)
}

// Issue 15 (i): in the shared and exempt modes every new tool name cloned the dependency
// map, with no cap: a model inventing names grew it (and the cost of each clone)
// without bound.
func TestIssue15iInventedNamesAreCappedInSharedAndExemptModes(t *testing.T) {
	t.Parallel()
	for _, mode := range []Unannotated{SharedKey, Exempt} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			cfg := crmConfig()
			cfg.Unannotated, cfg.UnannotatedKey, cfg.MaxDependencies = mode, "misc", 50
			m := MustNew(cfg)
			shared, _ := m.Get("misc")
			for i := range 20_000 {
				b, err := m.ForTool(fmt.Sprintf("invented_%d", i))
				require.NoError(t, err)
				if mode == SharedKey {
					require.Same(t, shared, b, "every unannotated tool shares one breaker")
				} else {
					require.Nil(t, b, "unannotated tools are exempt")
				}
			}
			s := m.snap.Load()
			require.LessOrEqual(t, len(s.tools), 50+len(cfg.ExemptTools)+3, "at most MaxDependencies names remembered")
			require.LessOrEqual(t, len(s.toolOf), 50+3)
			b, err := m.ForTool("lookup_customer")
			require.NoError(t, err)
			crm, _ := m.Get("crm")
			require.Same(t, crm, b, "configured tools are not affected")
			key, guarded := m.DependencyOf("invented_19999")
			require.Equal(t, mode == SharedKey, guarded)
			if guarded {
				require.Equal(t, "misc", key)
			}
		})
	}
}

// TestNamesAreCheckedWhereTheyEnter: a name that would break a Prometheus label, a log
// line or the admin page is refused with the field and the value, before any breaker
// is built.
func TestNamesAreCheckedWhereTheyEnter(t *testing.T) {
	for name, cfg := range map[string]Config{
		"invalid UTF-8 key":       {Dependencies: map[string]Dependency{"crm\xff": {}}},
		"control in a tool":       {Dependencies: map[string]Dependency{"crm": {Tools: []string{"look\x1bup"}}}},
		"bidi override in a host": {Dependencies: map[string]Dependency{"crm": {Hosts: []string{"crm\u202e.example"}}}},
		"absurd model name":       {Models: []ModelEndpoint{{Model: strings.Repeat("m", 300)}}},
		"newline in a region":     {Models: []ModelEndpoint{{Model: "gemini", Region: "us\nfake"}}},
		"control in exempt tool":  {ExemptTools: []string{"x\x00"}},
	} {
		_, err := New(cfg)
		require.Error(t, err, name)
		var ce *agentbreaker.ConfigError
		require.ErrorAs(t, err, &ce, name)
		require.NotEmpty(t, ce.Field, name)
	}
	_, err := New(Config{Dependencies: map[string]Dependency{"crm": {Tools: []string{"lookup_customer"}, Hosts: []string{"crm.example:443"}}},
		Models: []ModelEndpoint{{Model: "gemini-2.5-pro", Region: "europe-west1"}}})
	require.NoError(t, err)
}
