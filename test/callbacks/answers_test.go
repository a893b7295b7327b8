package callbacks_test

// Issue 22 (d) and findings 3 and 7, from the outside: a dependency that answers (a
// declined card, a 402, a validation message) is working. Its answer reaches the model,
// cleaned and bounded, and never counts against its breaker; a failure that names an
// outage still counts and its text stays withheld. Everything here is public API: the
// real adk-go runner (breakertest.Harness), a scripted model, functiontool tools and a
// journal on SQLite.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
)

type chargeArgs struct {
	CustomerID string `json:"customer_id"`
	Cents      int    `json:"cents"`
}

// chargeTool is a functiontool whose handler answers with answer and counts its calls.
func chargeTool(t *testing.T, calls *atomic.Int64, answer func(n int64) (map[string]any, error)) tool.Tool {
	t.Helper()
	tl, err := functiontool.New(functiontool.Config{Name: "charge_card", Description: "Charges a card."},
		func(_ agent.Context, _ chargeArgs) (map[string]any, error) { return answer(calls.Add(1)) })
	require.NoError(t, err)
	return tl
}

// answersWorld is an agent with one payments dependency.
type answersWorld struct {
	h     *breakertest.Harness
	model *breakertest.Model
	deps  *dependencymap.Map
}

func newAnswersWorld(t *testing.T, tl tool.Tool, cfg callbacks.Config) *answersWorld {
	t.Helper()
	m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		return breakertest.Call("charge_card", map[string]any{"customer_id": "c-7", "cents": 1200})
	}})
	deps := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"payments": {Tools: []string{"charge_card"}},
	}})
	cfg.Dependencies = deps
	guard := callbacks.MustNew(cfg)
	a, err := llmagent.New(llmagent.Config{Name: "shop", Model: m, Tools: []tool.Tool{tl}})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{guard.Plugin()}})
	return &answersWorld{h: h, model: m, deps: deps}
}

// turn runs one turn in a new session and returns the function response the model
// was shown, as JSON.
func (w *answersWorld) turn(t *testing.T) string {
	t.Helper()
	id, err := w.h.NewSession(t.Context())
	require.NoError(t, err)
	before := w.model.Calls()
	_, err = w.h.Run(t.Context(), id, "charge my card")
	require.NoError(t, err)
	for _, r := range w.model.Requests()[before:] {
		if rs := r.FunctionResponses(); len(rs) == 1 {
			b, err := json.Marshal(rs[0].Response)
			require.NoError(t, err)
			return string(b)
		}
	}
	t.Fatal("the model was shown no function response")
	return ""
}

func (w *answersWorld) state(t *testing.T) breaker.State {
	t.Helper()
	b, ok := w.deps.Get("payments")
	require.True(t, ok, "the payments breaker exists after a call")
	return b.State()
}

func TestDependencyAnswersReachTheModelAndNeverTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer func(int64) (map[string]any, error)
		want   string // in every answer the model reads
	}{
		{"in-band refusal", func(int64) (map[string]any, error) {
			return map[string]any{"success": false, "error": "card_declined", "message": "The card was declined."}, nil
		}, "The card was declined."},
		{"typed 402", func(int64) (map[string]any, error) {
			return nil, classify.StatusError(402, 0, "card declined: insufficient funds")
		}, "card declined: insufficient funds"},
		{"validation", func(int64) (map[string]any, error) {
			return nil, classify.InvalidInput("customer_id must be numeric")
		}, "customer_id must be numeric"},
		{"refusal in prose with a secret", func(int64) (map[string]any, error) {
			return map[string]any{"status": "error", "error": "declined \x1b[2J; key sk_live_4eC39HqLyjWDarjtT1zdp7dc"}, nil
		}, "declined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			w := newAnswersWorld(t, chargeTool(t, &calls, tt.answer), callbacks.Config{})
			for i := range 50 { // the default volume gate is 20 calls: a counted refusal would trip
				seen := w.turn(t)
				require.Contains(t, seen, tt.want, "turn %d: the model reads the dependency's answer", i+1)
				require.NotContains(t, seen, payloads.TypeFailed, "turn %d", i+1)
				require.NotContains(t, seen, "4eC39HqLyjWDarjtT1zdp7dc", "a key shape is masked")
				require.NotContains(t, seen, `\u001b`, "escapes are cleaned")
			}
			require.EqualValues(t, 50, calls.Load(), "every call reached the dependency")
			require.Equal(t, breaker.Closed, w.state(t))
		})
	}
}

func TestOutageNamedInAnAnswerCountsAndIsWithheld(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	w := newAnswersWorld(t, chargeTool(t, &calls, func(int64) (map[string]any, error) {
		return map[string]any{"status": "error", "message": "ledger said HTTP 503 <html>zq9-internal-host</html>"}, nil
	}), callbacks.Config{})
	for range 25 {
		seen := w.turn(t)
		require.NotContains(t, seen, "zq9-internal-host", "an outage's text stays withheld")
	}
	require.Equal(t, breaker.Open, w.state(t))
	require.EqualValues(t, 20, calls.Load(), "the breaker opened at the volume gate and answered the rest")
}

// Finding 3: a mutation the dependency refused is FAILED, not UNKNOWN: the model is not
// told "outcome unknown, do not repeat", the journal holds no unresolved intent, and
// the customer's retry in the next turn goes through.
func TestRefusedMutationIsFailedAndMayBeRetried(t *testing.T) {
	t.Parallel()
	j, err := journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "j.db")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	var calls atomic.Int64
	tl := chargeTool(t, &calls, func(n int64) (map[string]any, error) {
		if n == 1 {
			return map[string]any{"success": false, "error": "card_declined", "message": "The card was declined."}, nil
		}
		return map[string]any{"success": true, "charge_id": "ch_1"}, nil
	})
	w := newAnswersWorld(t, tl, callbacks.Config{
		MutatingTools: []string{"charge_card"},
		Retry:         retry.MustNew(retry.Config{Journal: j.ForRetry()}),
		Journal:       j,
	})
	first := w.turn(t)
	require.Contains(t, first, "The card was declined.")
	require.NotContains(t, first, payloads.TypeOutcomeUnknown)

	pending, err := j.Pending(t.Context())
	require.NoError(t, err)
	require.Empty(t, pending, "nothing is left for an operator: the dependency answered")
	intents, err := j.Intents(t.Context(), journal.Filter{})
	require.NoError(t, err)
	require.Len(t, intents, 1)
	require.Equal(t, classify.Failed, intents[0].Outcome)
	require.Equal(t, classify.ClassRefused, intents[0].ErrorClass)

	second := w.turn(t)
	require.True(t, strings.Contains(second, "ch_1"), "the retry went through: %s", second)
	require.EqualValues(t, 2, calls.Load())
}
