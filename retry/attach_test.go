package retry

import (
	"context"
	"testing"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/attach"
)

// TestAddedHookRunsAfterOnAttempt attaches a hook after New, as the telemetry's Wire
// does: it receives every attempt's event, after Config.OnAttempt's hooks.
func TestAddedHookRunsAfterOnAttempt(t *testing.T) {
	var order []string
	r := MustNew(Config{OnAttempt: []func(context.Context, Event){func(context.Context, Event) { order = append(order, "config") }}})
	if !attach.Add(r, func(_ context.Context, e Event) { order = append(order, "added "+e.Dependency) }) {
		t.Fatal("attach.Add(retrier, hook) = false")
	}
	r.Do(t.Context(), Operation{Dependency: "crm"}, func(context.Context, Info) (classify.Classification, error) {
		return classify.ForClass(classify.ClassNone), nil
	})
	if len(order) != 2 || order[0] != "config" || order[1] != "added crm" {
		t.Fatalf("hooks ran %q, want [config added crm]", order)
	}
}
