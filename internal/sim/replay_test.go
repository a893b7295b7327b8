package sim

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// trace writes a CSV of one call a second for 10 minutes: 3% failures while healthy,
// and from 3m to 6m an outage in which 90% of calls time out after 5 s.
func trace(t *testing.T) (csv string, onset, recovery time.Time) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 7))
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	onset, recovery = start.Add(3*time.Minute), start.Add(6*time.Minute)
	var b strings.Builder
	b.WriteString("timestamp,dependency,outcome,latency_ms\n")
	for i := 0; i < 600; i++ {
		at := start.Add(time.Duration(i) * time.Second)
		down := !at.Before(onset) && at.Before(recovery)
		switch {
		case down && r.Float64() < 0.9:
			fmt.Fprintf(&b, "%s,crm,UNKNOWN,5000\n", at.Format(time.RFC3339Nano))
		case r.Float64() < 0.03:
			fmt.Fprintf(&b, "%d,crm,FAILED,%d\n", at.Unix(), 80+r.IntN(40))
		default:
			fmt.Fprintf(&b, "%s,crm,SUCCEEDED,%d\n", at.Format(time.RFC3339), 80+r.IntN(40))
		}
		if i%10 == 0 { // another dependency, always healthy
			fmt.Fprintf(&b, "%s,billing,ok,50\n", at.Format(time.RFC3339))
		}
	}
	return b.String(), onset, recovery
}

func TestReplayTrace(t *testing.T) {
	csv, onset, recovery := trace(t)
	rs, err := ReadRecords(strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 660 {
		t.Fatalf("%d records, want 660", len(rs))
	}
	if d := Dependencies(rs); len(d) != 2 || d[0] != "crm" {
		t.Fatalf("dependencies %v", d)
	}
	outages := DetectOutages(filter(rs, "crm"))
	if len(outages) != 1 || outages[0].Start.Sub(onset).Abs() > 20*time.Second || outages[0].End.Sub(recovery).Abs() > 20*time.Second {
		t.Fatalf("outages %+v, want one from %v to %v", outages, onset, recovery)
	}
	p, err := DefaultScenario().UserPolicy()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Replay(rs, "crm", p, outages)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.FalseTrips != 0 || len(res.Trips) == 0 || res.TripAfterOnset[0] == nil || *res.TripAfterOnset[0] > 40 {
		t.Errorf("design-document policy: %+v: want a trip within 40 s of onset and no false trip", res)
	}
	if res.OutageCallsSaved < 5*res.OutageCallsSent {
		t.Errorf("saved %d, sent %d during the outage: want most calls saved", res.OutageCallsSaved, res.OutageCallsSent)
	}
	// A hair trigger trips on the healthy 3% of failures.
	hair := breaker.Policy{FailureRateThreshold: 0.1, MinimumCalls: 2, Window: 10 * time.Second}
	res, err = Replay(rs, "crm", hair, outages)
	if err != nil {
		t.Fatal(err)
	}
	if res.FalseTrips == 0 || res.HealthyRejected == 0 {
		t.Errorf("hair-trigger policy: %+v: want false trips", res)
	}
}

func TestSweepRecommends(t *testing.T) {
	csv, _, _ := trace(t)
	rs, err := ReadRecords(strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	grid := SweepGrid{FailureRates: []float64{0.1, 0.5}, MinimumCalls: []int{2, 20}, Windows: []time.Duration{10 * time.Second, 30 * time.Second}}
	out, err := Sweep(rs, "crm", breaker.Policy{Cooldown: 30 * time.Second}, grid)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 8 {
		t.Fatalf("%d results", len(out))
	}
	best := out[0]
	for _, r := range out[1:] {
		if r.FalseTrips < best.FalseTrips || (r.FalseTrips == best.FalseTrips &&
			r.OutageCallsSent+r.HealthyRejected < best.OutageCallsSent+best.HealthyRejected) {
			t.Errorf("%+v ranks after the recommendation %+v", r.Policy, best.Policy)
		}
	}
	if best.FalseTrips != 0 || best.OutageCallsSaved == 0 {
		t.Errorf("recommended %+v", best)
	}
	worst := out[len(out)-1]
	if worst.FalseTrips == 0 {
		t.Errorf("no policy of the grid tripped falsely; the sweep shows no trade-off: %+v", worst)
	}
}

func TestReadRecordsErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"fields", "2026-03-01T09:00:00Z,crm,ok\n", "3 fields"},
		{"timestamp", "yesterday,crm,ok,5\n", `timestamp "yesterday"`},
		{"latency", "2026-03-01T09:00:00Z,crm,ok,fast\n", `latency_ms "fast"`},
		{"outcome", "2026-03-01T09:00:00Z,crm,meh,5\n", `outcome "meh"`},
		{"dependency", "2026-03-01T09:00:00Z,,ok,5\n", `dependency ""`},
		{"json time", `{"time":"noon","dependency":"crm","outcome":"SUCCEEDED"}` + "\n", `time "noon"`},
		{"json elapsed", `{"time":"2026-03-01T09:00:00Z","dependency":"crm","outcome":"FAILED","elapsed_ms":"x"}` + "\n", "elapsed_ms x"},
		{"json line", "{\"time\":1}\n{oops\n", "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadRecords(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestReadRecordsFromCallbacksLog reads what agentbreaker's callbacks really log: a
// JSON slog handler behind callbacks.Config.Observability.Logger, calls made through the plugin.
func TestReadRecordsFromCallbacksLog(t *testing.T) {
	var buf bytes.Buffer
	clk := clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk,
		Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}}})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: clk,
		Guidance: callbacks.Guidance{
			DisableDocstrings: true,
		},
		Observability: callbacks.Observability{
			Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		},
	})
	pl := cb.Plugin()
	before, onErr, after := pl.BeforeToolCallback(), pl.OnToolErrorCallback(), pl.AfterToolCallback()
	inv := &invocation{Context: context.Background(), id: "inv"}
	tl := simTool("lookup")
	outcomes := []error{nil, fmt.Errorf("upstream: %w", context.DeadlineExceeded), nil}
	for i, e := range outcomes {
		ctx := agent.NewToolContext(inv, fmt.Sprintf("c%d", i), nil, nil)
		if r, err := before(ctx, tl, map[string]any{"i": i}); r != nil || err != nil {
			t.Fatalf("call %d refused: %v %v", i, r, err)
		}
		clk.Advance(250 * time.Millisecond)
		if e != nil {
			_, _ = onErr(ctx, tl, map[string]any{"i": i}, e)
			_, _ = after(ctx, tl, map[string]any{"i": i}, nil, e)
		} else {
			_, _ = after(ctx, tl, map[string]any{"i": i}, map[string]any{"ok": true}, nil)
		}
	}
	// The same calls as the retry orchestrator logs them: not read a second time.
	buf.WriteString(`{"time":"2026-03-01T09:00:00Z","msg":"agentbreaker: attempt","dependency":"crm","attempt":1,"outcome":"SUCCEEDED","error_class":"none","elapsed_ms":250,"next":"succeeded"}` + "\n")
	rs, err := ReadRecords(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("read %d records from the callbacks' log, want 3:\n%s", len(rs), buf.String())
	}
	want := []classify.Verdict{classify.Healthy, classify.Counts, classify.Healthy}
	for i, r := range rs {
		if r.Dependency != "crm" || r.Verdict != want[i] || r.Elapsed != 250*time.Millisecond {
			t.Errorf("record %d: %+v, want crm, %v, 250ms", i, r, want[i])
		}
	}
}

func TestReplayWarnsWithoutSuccesses(t *testing.T) {
	rs, err := ReadRecords(strings.NewReader(`{"time":"2026-03-01T09:00:00Z","event":"call_outcome","dependency":"crm","outcome":"UNKNOWN","error_class":"timeout","elapsed_ms":5000}` + "\n"))
	if err != nil || len(rs) != 1 {
		t.Fatalf("%v, %d records", err, len(rs))
	}
	res, err := Replay(rs, "crm", breaker.Policy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Warning, "debug level") {
		t.Errorf("warning %q", res.Warning)
	}
}
