package bench

// Registry lookup: finding the breaker that guards a tool, by tool name, on the hot path
// of every tool call. The peers have no registry keyed by dependency; a
// sync.RWMutex-guarded map is the baseline a hand-written registry would start from.

import (
	"sync"
	"testing"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

func newRegistry(tb testing.TB) *dependencymap.Map {
	tb.Helper()
	m, err := dependencymap.New(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"crm":      {Tools: []string{"lookup_customer", "update_customer", "list_orders"}},
		"weather":  {Tools: []string{"get_forecast"}},
		"payments": {Tools: []string{"charge_card", "refund"}},
	}})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

type rwRegistry struct {
	mu sync.RWMutex
	m  map[string]*breaker.Breaker
}

func (r *rwRegistry) get(tool string) *breaker.Breaker {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.m[tool]
}

func newRWRegistry(tb testing.TB) *rwRegistry {
	b := newAgentbreaker(tb, cooldown, nil)
	return &rwRegistry{m: map[string]*breaker.Breaker{"update_customer": b, "get_forecast": b, "refund": b}}
}

func BenchmarkRegistry(b *testing.B) {
	b.Run("agentbreaker", func(b *testing.B) {
		m := newRegistry(b)
		b.ReportAllocs()
		for b.Loop() {
			if br, err := m.ForTool("update_customer"); br == nil || err != nil {
				b.Fatal("lookup failed")
			}
		}
	})
	b.Run("rwmutex-map", func(b *testing.B) {
		r := newRWRegistry(b)
		b.ReportAllocs()
		for b.Loop() {
			if r.get("update_customer") == nil {
				b.Fatal("lookup failed")
			}
		}
	})
}

func BenchmarkRegistryParallel(b *testing.B) {
	b.Run("agentbreaker", func(b *testing.B) {
		m := newRegistry(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if br, err := m.ForTool("update_customer"); br == nil || err != nil {
					b.Error("lookup failed")
					return
				}
			}
		})
	})
	b.Run("rwmutex-map", func(b *testing.B) {
		r := newRWRegistry(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if r.get("update_customer") == nil {
					b.Error("lookup failed")
					return
				}
			}
		})
	})
}
