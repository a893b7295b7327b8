// Package probes_test checks, from the outside, what docs/probes.md promises about a
// health probe that answers a 4xx, and what docs/failures.md and docs/partial-outages.md
// promise about the words of the payloads.
package probes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/probe"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
)

// syncBuffer is a log sink the prober's goroutines may write to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// healthServer answers every GET with code and counts the requests that reached it.
func healthServer(t *testing.T, code *atomic.Int32) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.WriteHeader(int(code.Load()))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

type probeFixture struct {
	clk    *clock.Fake
	deps   *dependencymap.Map
	crm    *breakertest.Server
	h      *breakertest.Harness
	prober *probe.Prober
	logs   *syncBuffer
}

// newProbeFixture builds an agent whose crm_lookup tool is listed under "crm", the
// dependency the probe checks; the first failed user call opens the breaker.
func newProbeFixture(t *testing.T, p *dependencymap.Probe) *probeFixture {
	t.Helper()
	f := &probeFixture{clk: clock.NewFake(time.Time{}), crm: breakertest.NewServer(t), logs: &syncBuffer{}}
	f.deps = dependencymap.MustNew(dependencymap.Config{
		Clock: f.clk,
		Dependencies: map[string]dependencymap.Dependency{"crm": {
			Tools: []string{"crm_lookup"},
			Policy: breaker.Policy{MinimumCalls: 1, FailureRateThreshold: 0.5, Window: time.Minute,
				Cooldown: 30 * time.Second, CooldownMultiplier: 1, Jitter: -1},
			Probe: p,
		}},
	})
	var err error
	f.prober, err = probe.FromMap(f.deps, probe.Config{Clock: f.clk, Logger: slog.New(slog.NewJSONHandler(f.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.prober.Close() })
	guard := callbacks.MustNew(callbacks.Config{Dependencies: f.deps, Clock: f.clk})
	lookup, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "crm_lookup", URL: f.crm.URL, TypedErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	m := breakertest.MustNewModel(breakertest.ModelConfig{Repeat: true, Steps: []breakertest.Step{
		breakertest.Call("crm_lookup", map[string]any{"query": "customer 42"}),
		breakertest.Text("done"),
	}})
	ag, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{lookup}})
	if err != nil {
		t.Fatal(err)
	}
	f.h = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: ag, Plugins: []*plugin.Plugin{guard.Plugin()}})
	return f
}

func (f *probeFixture) turn(t *testing.T) *breakertest.Turn {
	t.Helper()
	ctx := context.Background()
	sid, err := f.h.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := f.h.Run(ctx, sid, "who is customer 42?")
	if err != nil {
		t.Fatal(err)
	}
	return turn
}

func (f *probeFixture) breaker(t *testing.T) *breaker.Breaker {
	b, ok := f.deps.Get("crm")
	if !ok {
		t.Fatal("no crm breaker")
	}
	return b
}

// wantProblem is the problem docs/probes.md's Logs bullet names for each 4xx: "neutral
// (an error that says neither healthy nor failing: a 401, 403 or 404, any 4xx without a
// name of its own), rate_limited (a 429) or request_timeout (a 408)".
var wantProblem = map[int]string{401: "neutral", 403: "neutral", 404: "neutral", 418: "neutral", 429: "rate_limited", 408: "request_timeout"}

// docs/probes.md, rule 6: "A check that ... answers something that is neither healthy
// nor failing (a 404 from the health URL, a 401, ...) fails the probe ... with one log
// record ... naming the dependency, the check, the class and the problem", and Logs:
// "Every 4xx from a probe, of any kind, fails it and names its problem". Rule 3: with a
// probe, user calls are refused while the breaker is open. Both probe kinds: a URL
// (HTTPGet) and a Func returning classify.StatusError.
func TestA4xxProbeNeverClosesTheBreaker(t *testing.T) {
	for _, kind := range []string{"url", "func"} {
		for _, code := range []int{401, 403, 404, 408, 418, 429} {
			t.Run(fmt.Sprintf("%s/%d", kind, code), func(t *testing.T) {
				var status atomic.Int32
				status.Store(int32(code))
				hs, hits := healthServer(t, &status)
				var p *dependencymap.Probe
				if kind == "url" {
					p = &dependencymap.Probe{URL: hs.URL + "/healthz"}
				} else {
					p = &dependencymap.Probe{Func: func(ctx context.Context) error {
						hits.Add(1)
						if c := int(status.Load()); c >= 400 {
							return classify.StatusError(c, 0, "health check answered")
						}
						return nil
					}}
				}
				f := newProbeFixture(t, p)
				f.crm.Set(breakertest.Status(503))
				f.turn(t) // the user's call fails and opens the breaker
				b := f.breaker(t)
				if b.State() != breaker.Open {
					t.Fatalf("after a failed call the breaker is %v, want open", b.State())
				}
				crmBefore := f.crm.Requests()
				for round := 1; round <= 4; round++ {
					f.clk.Advance(31 * time.Second)
					before := hits.Load()
					f.prober.ProbeDue(context.Background())
					if hits.Load() == before {
						t.Fatalf("round %d: no probe reached the health check after the cooldown", round)
					}
					if st := b.State(); st == breaker.Closed {
						t.Fatalf("round %d: a probe answered %d and the breaker closed", round, code)
					}
					turn := f.turn(t)
					if rs := turn.FunctionResponses(); len(rs) != 1 || rs[0].Response[payloads.KeyResponseType] != payloads.TypeUnavailable {
						t.Fatalf("round %d: a user's call while the probe owns half-open got %v, want the unavailable payload", round, rs)
					}
				}
				if n := f.crm.Requests(); n != crmBefore {
					t.Errorf("%d user calls reached the CRM while its probe kept failing, want 0", n-crmBefore)
				}
				var failed []map[string]any
				for _, r := range f.logs.records(t) {
					if r["msg"] == "agentbreaker: health probe failed" {
						failed = append(failed, r)
					}
				}
				if len(failed) != 4 {
					t.Fatalf("%d 'health probe failed' records for 4 failed probes, want one each; records: %v", len(failed), f.logs.records(t))
				}
				for _, r := range failed {
					if r["problem"] != wantProblem[code] {
						t.Errorf("record problem = %v, want %q (record %v)", r["problem"], wantProblem[code], r)
					}
					if r["dependency"] != "crm" || r["check"] == nil || r["class"] == nil {
						t.Errorf("record lacks dependency/check/class: %v", r)
					}
					if r["level"] != "WARN" {
						t.Errorf("record level = %v, want WARN (error only for a panic)", r["level"])
					}
				}

				// The same probe closes the breaker once the check answers 200: the
				// test can tell a 4xx from a healthy answer.
				status.Store(200)
				f.clk.Advance(31 * time.Second)
				f.prober.ProbeDue(context.Background())
				if st := b.State(); st != breaker.Closed {
					t.Fatalf("a probe answered 200 and the breaker is %v, want closed", st)
				}
			})
		}
	}
}
