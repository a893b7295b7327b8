package telemetry_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// jsonLines is a concurrency-safe sink for JSON log records.
type jsonLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *jsonLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// failoverWarnings returns the warning records about model failover: the Failover's
// own, and any other record whose message speaks of a failover (the telemetry adapter
// used to write a second one). Breaker transitions are warnings of their own.
func (l *jsonLines) failoverWarnings(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		if m["level"] == "WARN" && strings.Contains(m["msg"].(string), "failover") {
			out = append(out, m)
		}
	}
	return out
}

// failoverRun is an agent on adk-go's runner whose model is a Failover over two local
// Gemini regions, wired to a Telemetry the way the README says, on a fake clock.
type failoverRun struct {
	t        *testing.T
	clock    *clock.Fake
	reg      *prometheus.Registry
	logs     *jsonLines
	deps     *dependencymap.Map
	f        *modelfailover.Failover
	r        *runner.Runner
	us, eu   *geminifake.Server
	usKey    string
	euKey    string
	mu       sync.Mutex
	hook     []modelfailover.Event
	markers  map[string]string // invocation ID -> MetaRoute of its final response
	sessions int
}

func newFailoverRun(t *testing.T, usRegion, euRegion string) *failoverRun {
	t.Helper()
	ctx := t.Context()
	fr := &failoverRun{t: t, clock: clock.NewFake(time.Time{}), reg: prometheus.NewPedanticRegistry(),
		logs: &jsonLines{}, markers: map[string]string{}}
	fr.us = geminifake.Start(t, geminifake.Config{Name: usRegion, Reply: geminifake.Reply{Text: "from " + usRegion}})
	fr.eu = geminifake.Start(t, geminifake.Config{Name: euRegion, Reply: geminifake.Reply{Text: "from " + euRegion}})
	llm := func(s *geminifake.Server) model.LLM {
		m, err := gemini.NewModel(ctx, "gemini-2.5-pro", s.ClientConfig(modelfailover.NewTransport))
		require.NoError(t, err)
		return m
	}
	logger := slog.New(slog.NewJSONHandler(fr.logs, nil)) // one logger for both, as the README says
	tel := telemetry.MustNew(telemetry.Config{Registerer: fr.reg, Clock: fr.clock, Logger: logger})
	// The default model policy: 50% over at least 50 calls in 5 minutes.
	fr.deps = dependencymap.MustNew(dependencymap.Config{Clock: fr.clock, PolicyVersion: "run-1",
		OnStateChange: []func(breaker.Event){tel.BreakerEvent}})
	tel.Watch(fr.deps)
	obs := tel.ModelObserver()
	fr.f = modelfailover.MustNew(modelfailover.Config{
		Routes: []modelfailover.Route{
			{Model: "gemini-2.5-pro", Region: usRegion, LLM: llm(fr.us)},
			{Model: "gemini-2.5-pro", Region: euRegion, LLM: llm(fr.eu)},
		},
		Breakers: fr.deps, Clock: fr.clock, Observer: obs, Logger: logger,
		OnFailover: func(e modelfailover.Event) {
			fr.mu.Lock()
			fr.hook = append(fr.hook, e)
			fr.mu.Unlock()
		},
	})
	obs.Watch(fr.f)
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: fr.f, Mode: llmagent.ModeChat})
	require.NoError(t, err)
	fr.r, err = runner.New(runner.Config{AppName: "failover-run", Agent: a,
		SessionService: session.InMemoryService(), AutoCreateSession: true})
	require.NoError(t, err)
	fr.usKey, fr.euKey = "gemini-2.5-pro@"+usRegion, "gemini-2.5-pro@"+euRegion
	return fr
}

// turn runs one user turn and keeps the route marker of its final response.
func (fr *failoverRun) turn() {
	fr.t.Helper()
	fr.sessions++
	var inv, route string
	for ev, err := range fr.r.Run(fr.t.Context(), "user", fmt.Sprintf("s%d", fr.sessions),
		genai.NewContentFromText("hello?", genai.RoleUser), agent.RunConfig{}) {
		require.NoError(fr.t, err)
		if ev.Author == "user" {
			continue
		}
		inv = ev.InvocationID
		if r, ok := ev.CustomMetadata[modelfailover.MetaRoute].(string); ok {
			route = r
		}
	}
	fr.mu.Lock()
	fr.markers[inv] = route
	fr.mu.Unlock()
}

func (fr *failoverRun) events() []modelfailover.Event {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return append([]modelfailover.Event(nil), fr.hook...)
}

func (fr *failoverRun) gauge(name string, labels ...string) float64 {
	fr.t.Helper()
	mfs, err := fr.reg.Gather()
	require.NoError(fr.t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			if m.Gauge != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1 // no such series
}

// failoverSpanEvents returns the "agentbreaker.failover" span events that name route.
func failoverSpanEvents(spans []sdktrace.ReadOnlySpan, route string) []map[string]any {
	var out []map[string]any
	for _, s := range spans {
		for _, e := range s.Events() {
			a := attrMap(e.Attributes)
			if e.Name == "agentbreaker.failover" && (a["agentbreaker.from"] == route || a["agentbreaker.to"] == route) {
				a["span"] = s.Name()
				out = append(out, a)
			}
		}
	}
	return out
}

// Issue 13, done means: a 30-minute simulated run with a flaky but healthy primary
// (one call in three failing, breaker closed) gives zero failover announcements; a
// real outage of the primary region gives exactly one announcement to the fallback
// and exactly one back, with the WARN record, the hook, the counter, the gauges, the
// span and the response marker agreeing.
func TestModelFailoverThirtyMinuteRun(t *testing.T) {
	spans := globalSpans()
	// The recorder is the process's: look only at the spans this run ends (with
	// -count=2 the first run's failover events are still in it).
	seen := len(spans.Ended())
	ended := func() []sdktrace.ReadOnlySpan { return spans.Ended()[seen:] }
	fr := newFailoverRun(t, "run-us", "run-eu")
	const every = 5 * time.Second // 60 calls per 5-minute window: above the volume gate

	// Thirty minutes of a flaky primary.
	for i := range int(30 * time.Minute / every) {
		if i%3 == 2 {
			require.NoError(t, fr.us.Enqueue(geminifake.Reply{Fail: &geminifake.Failure{Code: 503}}))
		}
		fr.turn()
		fr.clock.Advance(every)
	}
	b, err := fr.deps.ForModel("gemini-2.5-pro", "run-us")
	require.NoError(t, err)
	require.Equal(t, breaker.Closed, b.State(), "a third failing is under the 50% gate")
	assert.Empty(t, fr.events(), "no hook call")
	assert.Empty(t, fr.logs.failoverWarnings(t), "no warning")
	assert.Equal(t, -1.0, fr.gauge("agentbreaker_model_failovers_total"), "no failover counted")
	assert.Equal(t, 120.0, fr.gauge("agentbreaker_model_fallback_calls_total",
		"from", fr.usKey, "to", fr.euKey, "cause", "http_5xx"), "each fallback call counted")
	assert.InDelta(t, 1.0/3, fr.gauge("agentbreaker_model_fallback_ratio"), 0.02)
	assert.Equal(t, 1.0, fr.gauge("agentbreaker_model_route_serving", "region", "run-us"))
	assert.Equal(t, 0.0, fr.gauge("agentbreaker_model_route_serving", "region", "run-eu"))
	assert.Empty(t, failoverSpanEvents(ended(), fr.usKey))

	// A real outage of the primary region: ten minutes of 503s.
	require.NoError(t, fr.us.Fail(geminifake.Failure{Code: 503}))
	for range int(10 * time.Minute / every) {
		fr.turn()
		fr.clock.Advance(every)
	}
	require.NotEqual(t, breaker.Closed, b.State())
	require.Len(t, fr.events(), 1, "one announcement for the outage, however many probes fail")
	assert.Equal(t, 1.0, fr.gauge("agentbreaker_model_route_serving", "region", "run-eu"))
	assert.Equal(t, 0.0, fr.gauge("agentbreaker_model_route_serving", "region", "run-us"))

	// The region recovers: the next probe brings traffic back, once.
	fr.us.Recover()
	for range int(6 * time.Minute / every) {
		fr.turn()
		fr.clock.Advance(every)
	}
	require.Equal(t, breaker.Closed, b.State())

	evs := fr.events()
	require.Len(t, evs, 2)
	assert.Equal(t, [2]string{fr.usKey, fr.euKey}, [2]string{evs[0].From.Name, evs[0].To.Name})
	assert.Equal(t, modelfailover.Cause("http_5xx"), evs[0].Cause)
	assert.Equal(t, [2]string{fr.euKey, fr.usKey}, [2]string{evs[1].From.Name, evs[1].To.Name})
	assert.Equal(t, modelfailover.CauseProbeSucceeded, evs[1].Cause)

	// The WARN records: one per announcement, the same change, the same request.
	warns := fr.logs.failoverWarnings(t)
	require.Len(t, warns, 2, "one warning per failover, none from the telemetry adapter")
	for i, e := range evs {
		assert.Equal(t, e.From.Name, warns[i]["from"])
		assert.Equal(t, e.To.Name, warns[i]["to"])
		assert.Equal(t, string(e.Cause), warns[i]["cause"])
		assert.Equal(t, e.Reason, warns[i]["reason"])
		assert.Equal(t, e.RequestID, warns[i]["request_id"])
		assert.NotEmpty(t, e.RequestID)
		assert.NotContains(t, e.Reason, "geminifake", "no upstream text in the reason")
		// The response marker of the call that caused the change names its new route.
		fr.mu.Lock()
		assert.Equal(t, e.To.Name, fr.markers[e.RequestID], "marker of request %s", e.RequestID)
		fr.mu.Unlock()
	}

	// The counter and the gauges.
	require.NoError(t, testutil.CollectAndCompare(fr.reg, strings.NewReader(fmt.Sprintf(`
# HELP agentbreaker_model_failovers_total Model calls moved from one route (model@region) to the next, by cause.
# TYPE agentbreaker_model_failovers_total counter
agentbreaker_model_failovers_total{cause="http_5xx",from=%[1]q,to=%[2]q} 1
agentbreaker_model_failovers_total{cause="probe_succeeded",from=%[2]q,to=%[1]q} 1
# HELP agentbreaker_model_route_serving 1 for the model route serving calls now, 0 for routes that served before.
# TYPE agentbreaker_model_route_serving gauge
agentbreaker_model_route_serving{model="gemini-2.5-pro",region="run-eu"} 0
agentbreaker_model_route_serving{model="gemini-2.5-pro",region="run-us"} 1
`, fr.usKey, fr.euKey)), "agentbreaker_model_failovers_total", "agentbreaker_model_route_serving"))

	// The spans: one failover event on the generate_content span of each causing call.
	got := failoverSpanEvents(ended(), fr.usKey)
	require.Len(t, got, 2)
	for i, e := range evs {
		assert.Equal(t, e.From.Name, got[i]["agentbreaker.from"])
		assert.Equal(t, e.To.Name, got[i]["agentbreaker.to"])
		assert.Equal(t, string(e.Cause), got[i]["agentbreaker.cause"])
		assert.True(t, strings.HasPrefix(got[i]["span"].(string), "generate_content"), "span %v", got[i]["span"])
	}

	// Issue 13c: with no traffic the fallback ratio decays, read at scrape time.
	assert.Positive(t, fr.gauge("agentbreaker_model_fallback_ratio"))
	fr.clock.Advance(16 * time.Minute)
	assert.Equal(t, 0.0, fr.gauge("agentbreaker_model_fallback_ratio"))
}
