package dependencymap

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/internal/attach"
)

// TestAddedListenerHearsEveryBreaker attaches a listener after New, as the telemetry's
// Wire does: a breaker built by New and one AddTools builds later both deliver to it,
// after the listeners of Config.OnStateChange.
func TestAddedListenerHearsEveryBreaker(t *testing.T) {
	var order []string
	m := MustNew(Config{
		Dependencies:  map[string]Dependency{"crm": {Tools: []string{"lookup"}, Policy: breaker.Policy{MinimumCalls: 1}}},
		OnStateChange: []func(breaker.Event){func(e breaker.Event) { order = append(order, "config "+e.Breaker) }},
	})
	if !attach.Add(m, func(e breaker.Event) { order = append(order, "added "+e.Breaker) }) {
		t.Fatal("attach.Add(map, listener) = false")
	}
	if err := m.AddTools("payments", "charge"); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"crm", "payments"} {
		b, _ := m.Get(key)
		b.ForceOpen("test")
	}
	want := []string{"config crm", "added crm", "config payments", "added payments"}
	if len(order) != len(want) {
		t.Fatalf("delivered %q, want %q", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("delivered %q, want %q", order, want)
		}
	}
}
