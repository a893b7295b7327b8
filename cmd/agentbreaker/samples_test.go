package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/sim"
)

var updateSamples = flag.Bool("update-samples", false, "rewrite examples/data/calls.jsonl and calls.csv from the library's own call records")

const (
	sampleRecordsPath = "../../examples/data/calls.jsonl"
	sampleCSVPath     = "../../examples/data/calls.csv"
)

// TestSampleRecordsAreTheLibrarysOwn keeps examples/data/calls.jsonl what agentbreaker
// itself logs: the callbacks plugin in adk-go's real runner, with a JSON slog logger,
// guarding two tools (breakers forced closed, a shadow rollout) through a 20-minute morning in which the CRM answers 503 for five
// minutes. The only edits are to what the runner makes random: the record times come
// from the fake clock the calls ran on, and invocation and call IDs are numbered.
// go test ./cmd/agentbreaker -run TestSampleRecordsAreTheLibrarysOwn -update-samples
// rewrites the file.
//
// examples/data/calls.csv is the same calls in the CSV form replay reads for records
// from elsewhere (timestamp when the call started, dependency, outcome, latency_ms).
func TestSampleRecordsAreTheLibrarysOwn(t *testing.T) {
	records := sampleRecords(t)
	rs, err := sim.ReadRecords(bytes.NewReader(records))
	if err != nil {
		t.Fatal(err)
	}
	var csv bytes.Buffer
	csv.WriteString("timestamp,dependency,outcome,latency_ms\n")
	for _, r := range rs {
		fmt.Fprintf(&csv, "%s,%s,%s,%d\n", r.End.Add(-r.Elapsed).UTC().Format(time.RFC3339Nano), r.Dependency, r.Outcome, r.Elapsed.Milliseconds())
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{sampleRecordsPath, records}, {sampleCSVPath, csv.Bytes()}} {
		if *updateSamples {
			if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.data, want) {
			t.Errorf("%s is not what the library logs now; rerun with -update-samples", f.path)
		}
	}
}

var sampleStart = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// sampleRecords runs the morning and returns the log.
func sampleRecords(t *testing.T) []byte {
	t.Helper()
	clk := clock.NewFake(sampleStart)
	outageFrom, outageTo := sampleStart.Add(7*time.Minute), sampleStart.Add(12*time.Minute)
	var log bytes.Buffer
	ids := map[string]string{}
	handler := slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey:
				return slog.Time(slog.TimeKey, clk.Now().UTC())
			case "request_id", "invocation_id", "function_call_id":
				v := a.Value.String()
				if v == "" {
					return a
				}
				if _, ok := ids[v]; !ok {
					prefix := "inv"
					if a.Key == "function_call_id" {
						prefix = "call"
					}
					ids[v] = fmt.Sprintf("%s-%04d", prefix, len(ids)+1)
				}
				return slog.String(a.Key, ids[v])
			}
			return a
		}})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk, Dependencies: map[string]dependencymap.Dependency{
		"crm":      {Tools: []string{"lookup_customer"}},
		"invoices": {Tools: []string{"get_invoice"}},
	}})
	// A shadow rollout: the breakers are forced closed, so every call reaches its
	// dependency and is logged with its outcome, which is what replay needs to judge
	// a policy (a breaker that trips hides the rest of the outage from its own log).
	for _, b := range deps.Breakers() {
		b.ForceClosed("shadow rollout: record every call")
	}
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk, Guidance: callbacks.Guidance{DisableDocstrings: true}, Observability: callbacks.Observability{Logger: slog.New(handler)}})

	// Latencies from a fixed sequence, so the file is the same at every run.
	seq := uint32(7)
	latency := func(base, spread int) time.Duration {
		seq = seq*1664525 + 1013904223
		return time.Duration(base+int(seq>>16)%spread) * time.Millisecond
	}
	type args struct {
		ID string `json:"id"`
	}
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup_customer", Description: "Looks a customer up in the CRM."},
		func(_ agent.Context, a args) (map[string]any, error) {
			if now := clk.Now(); !now.Before(outageFrom) && now.Before(outageTo) {
				clk.Advance(latency(20, 30))
				return nil, classify.StatusError(503, 0, "crm: service unavailable")
			}
			clk.Advance(latency(60, 90))
			return map[string]any{"id": a.ID, "name": "Ada"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	invoice, err := functiontool.New(functiontool.Config{Name: "get_invoice", Description: "Reads an invoice."},
		func(_ agent.Context, a args) (map[string]any, error) {
			calls++
			clk.Advance(latency(30, 40))
			if calls%23 == 0 {
				return nil, classify.StatusError(503, 0, "invoices: service unavailable")
			}
			return map[string]any{"id": a.ID, "total": 42}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	next := ""
	model := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(r breakertest.Request) breakertest.Step {
		if len(r.FunctionResponses()) > 0 {
			return breakertest.Text("done")
		}
		return breakertest.Call(next, map[string]any{"id": "c-17"})
	}})
	root, err := llmagent.New(llmagent.Config{Name: "root", Model: model, Tools: []tool.Tool{lookup, invoice}})
	if err != nil {
		t.Fatal(err)
	}
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	ctx := context.Background()
	for i := range 1200 { // one turn a second: two for the CRM, then one for the invoices
		if at := sampleStart.Add(time.Duration(i) * time.Second); clk.Now().Before(at) {
			clk.Advance(at.Sub(clk.Now()))
		}
		next = "lookup_customer"
		if i%3 == 2 {
			next = "get_invoice"
		}
		session, err := h.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Run(ctx, session, "what does customer c-17 owe?"); err != nil {
			t.Fatal(err)
		}
	}
	return log.Bytes()
}
