package telemetry_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// latency is the time every request to the billing server takes on the fake clock.
const latency = 250 * time.Millisecond

// slowTransport moves the fake clock on by latency while a request is in flight, so
// each call has a known duration without the test waiting for real time.
type slowTransport struct {
	clk  *clock.Fake
	next http.RoundTripper
}

func (s slowTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	s.clk.Advance(latency)
	return resp, err
}

// billingAgent is an adk-go agent whose get_invoice tool calls a local HTTP server,
// guarded by the callbacks plugin, reporting to the fixture's Telemetry. The breakers,
// the callbacks and the telemetry share one fake clock.
type billingAgent struct {
	*fixture
	deps   *dependencymap.Map
	server *breakertest.Server
	cb     *callbacks.Callbacks
	model  *breakertest.Model
	h      *breakertest.Harness
	sid    string
}

// newBillingAgent wires everything the way the README tells users to. The model's
// function call IDs are prefix-1, prefix-2, ... so spans and logs can be matched.
func newBillingAgent(t *testing.T, prefix string) *billingAgent {
	t.Helper()
	a := &billingAgent{fixture: newFixture(t), server: breakertest.NewServer(t)}
	var err error
	a.deps, err = dependencymap.New(dependencymap.Config{
		PolicyVersion: "v7",
		Clock:         a.clock,
		Dependencies: map[string]dependencymap.Dependency{
			"billing": {Tools: []string{"get_invoice"}, Policy: breaker.Policy{MinimumCalls: 4, Cooldown: 30 * time.Second, Jitter: -1}},
		},
		OnStateChange: []func(breaker.Event){a.tel.BreakerEvent},
	})
	require.NoError(t, err)
	a.tel.Watch(a.deps)
	a.cb, err = callbacks.New(callbacks.Config{Dependencies: a.deps, Clock: a.clock, Observability: callbacks.Observability{Observer: a.tel}})
	require.NoError(t, err)

	invoice, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{
		Name: "get_invoice", URL: a.server.URL,
		Client: &http.Client{Transport: slowTransport{clk: a.clock, next: &http.Transport{DisableKeepAlives: true}}},
	})
	require.NoError(t, err)
	var n atomic.Int64
	call := func() breakertest.Step {
		return breakertest.Calls(&genai.FunctionCall{
			ID: fmt.Sprintf("%s-%d", prefix, n.Add(1)), Name: "get_invoice", Args: map[string]any{"query": "INV-7"},
		})
	}
	// The model asks for the invoice once per turn, asks again when told the tool is
	// unavailable (as models do), and gives up when the payload turns firm.
	a.model = breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		rs := r.FunctionResponses()
		if len(rs) == 0 {
			return call()
		}
		switch p := rs[0].Response; {
		case p["firm"] == true:
			return breakertest.Text("Billing is down; answering without the invoice.")
		case p["status"] == "unavailable":
			return call()
		case p["status"] == "ok":
			return breakertest.Text("Invoice INV-7 is paid.")
		}
		return breakertest.Text("The invoice lookup failed.")
	}})
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: a.model, Tools: []tool.Tool{invoice}})
	require.NoError(t, err)
	a.h = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{a.cb.Plugin()}})
	a.sid, err = a.h.NewSession(context.Background())
	require.NoError(t, err)
	return a
}

func (a *billingAgent) turn(t *testing.T) *breakertest.Turn {
	t.Helper()
	turn, err := a.h.Run(context.Background(), a.sid, "Is invoice INV-7 paid?")
	require.NoError(t, err)
	return turn
}

// runnerIncidentMetrics are the families compared at each moment of the incident.
var runnerIncidentMetrics = []string{
	"agentbreaker_breaker_state",
	"agentbreaker_breaker_transitions_total",
	"agentbreaker_breaker_probes_total",
	"agentbreaker_breaker_open_seconds_total",
	"agentbreaker_breaker_open_duration_seconds",
	"agentbreaker_breaker_retry_after_seconds",
	"agentbreaker_calls_total",
	"agentbreaker_call_duration_seconds",
	"agentbreaker_short_circuits_total",
}

// TestRunnerIncidentExposition is issue 5's end-to-end check: an agent run by adk-go's
// runner, with the callbacks plugin reporting to Telemetry, calls a real local HTTP
// dependency that fails on command. The exposition text is compared while the breaker
// is closed, while it is open and short-circuiting, and after it recovered through a
// probe; the requests that reached the dependency are counted exactly.
func TestRunnerIncidentExposition(t *testing.T) {
	t.Parallel()
	a := newBillingAgent(t, "incident")
	b, ok := a.deps.Get("billing")
	require.True(t, ok)

	// Closed: two healthy turns, one request each.
	for range 2 {
		require.Equal(t, "Invoice INV-7 is paid.", a.turn(t).FinalText())
	}
	require.Equal(t, int64(2), a.server.Requests())
	a.compare(t, runnerClosedText, runnerIncidentMetrics...)

	// The dependency starts answering 503: two failing turns make 2 failures of 4
	// calls, which trips the 50% rate gate over the 4-call volume gate.
	a.server.Set(breakertest.Status(http.StatusServiceUnavailable))
	for range 2 {
		require.Equal(t, "The invoice lookup failed.", a.turn(t).FinalText())
	}
	require.Equal(t, breaker.Open, b.State())
	require.Equal(t, int64(4), a.server.Requests())

	// Open, twenty seconds into the thirty-second cooldown: the model is refused, asks
	// again, is refused firmly and answers without the tool. Nothing is sent.
	a.clock.Advance(20 * time.Second)
	require.Equal(t, "Billing is down; answering without the invoice.", a.turn(t).FinalText())
	require.Equal(t, int64(4), a.server.Requests())
	a.compare(t, runnerOpenText, runnerIncidentMetrics...)

	// The dependency recovers. Fifteen seconds later the cooldown is over: the next
	// call is the probe; it succeeds and the breaker closes, 35.25 seconds after it
	// opened (the probe's own 250ms included). A further turn goes through as usual.
	a.server.Set(breakertest.OK("INV-7: paid"))
	a.clock.Advance(15 * time.Second)
	require.Equal(t, "Invoice INV-7 is paid.", a.turn(t).FinalText())
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, "Invoice INV-7 is paid.", a.turn(t).FinalText())
	require.Equal(t, int64(6), a.server.Requests(), "the whole incident cost the dependency six requests")
	a.compare(t, runnerRecoveredText, runnerIncidentMetrics...)

	s := a.cb.Stats()
	require.Zero(t, s.InFlight)
	require.Zero(t, s.Invocations)
	require.Zero(t, s.Panics)
}
