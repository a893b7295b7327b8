package sim

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// month writes generated traffic to a file and returns how to open it.
func month(t testing.TB, cfg GenerateConfig) func() (io.ReadCloser, error) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "month.jsonl")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(f, cfg); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return func() (io.ReadCloser, error) { return os.Open(name) }
}

func TestTuneRefusesWithOneOutage(t *testing.T) {
	csv, _, _ := trace(t) // crm: one outage; billing: none
	open := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(csv)), nil }
	res, err := Tune(open, TuneConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Dependencies) != 2 || len(res.Dependencies[0].Outages) != 1 {
		t.Fatalf("%+v", res.Dependencies)
	}
	for _, dt := range res.Dependencies {
		if dt.Best >= 0 || !strings.Contains(dt.NoRecommendation, "needs at least 2") {
			t.Errorf("%s: best %d, no recommendation %q; want a refusal that says it needs 2 outages", dt.Dependency, dt.Best, dt.NoRecommendation)
		}
	}
}

// TestTuneRefusesRecordsOutOfOrder: the second pass streams, so a file whose calls
// are far out of order is an error that says to sort it, not a silent misreplay.
func TestTuneRefusesRecordsOutOfOrder(t *testing.T) {
	var b bytes.Buffer
	if _, err := Generate(&b, GenerateConfig{Days: 4, Outages: 2, Rate: 0.15, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(b.String(), "\n")
	half := len(lines) / 2
	swapped := strings.Join(append(lines[half:], lines[:half]...), "")
	open := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(swapped)), nil }
	_, err := Tune(open, TuneConfig{})
	if err == nil || !strings.Contains(err.Error(), "sort the file by time") {
		t.Errorf("error %v, want one that says to sort the file", err)
	}
}

// TestTuneBeatsTheDefaultHeldOut checks the promise of docs/tuning.md on a smaller
// recording: on the outages each fold did not fit, the folds' choices send fewer
// calls to the dead dependency than the plugin's default policy.
func TestTuneBeatsTheDefaultHeldOut(t *testing.T) {
	res, err := Tune(month(t, GenerateConfig{Days: 6, Outages: 3, Rate: 0.15, Seed: 5}), TuneConfig{})
	if err != nil {
		t.Fatal(err)
	}
	dt := res.Dependencies[0]
	if dt.Dependency != "crm" || dt.Best < 0 {
		t.Fatalf("%s: no recommendation: %s", dt.Dependency, dt.NoRecommendation)
	}
	if len(dt.Folds) != len(dt.Outages) || dt.Votes < 1 {
		t.Errorf("%d folds for %d outages, %d votes", len(dt.Folds), len(dt.Outages), dt.Votes)
	}
	if dt.HeldOut.DeadSent >= dt.BaseHeldOut.DeadSent {
		t.Errorf("held out, tune sent %d calls to the dead dependency, the default %d", dt.HeldOut.DeadSent, dt.BaseHeldOut.DeadSent)
	}
	if s := dt.Sizing; s.Timeout <= s.P995 || s.Timeout%(100*time.Millisecond) != 0 || s.MinLimit < 1 || s.MaxLimit < s.MinLimit {
		t.Errorf("sizing %+v", s)
	}
}

// TestTuneChoosesByFolds: each fold picks the best on the other segments; the
// recommendation is the candidate most folds pick; a refused candidate is never picked.
func TestTuneChoosesByFolds(t *testing.T) {
	cand := func(gate int, refused string, segs ...Segment) *Candidate {
		return &Candidate{policy: breaker.Policy{MinimumCalls: gate, Window: time.Minute}, Segments: segs, Refused: refused}
	}
	seg := func(dead, refused, falseTrips int) Segment {
		return Segment{DeadSent: dead, HealthyRefused: refused, FalseTrips: falseTrips}
	}
	base := cand(20, "", seg(50, 0, 0), seg(50, 0, 0), seg(50, 0, 0))
	a := cand(10, "", seg(10, 0, 0), seg(10, 0, 0), seg(10, 0, 1)) // a false trip in segment 2
	b := cand(10, "", seg(20, 0, 0), seg(20, 0, 0), seg(20, 0, 0))
	lint := cand(4, "lint warns", seg(0, 0, 0), seg(0, 0, 0), seg(0, 0, 0))
	dt := DependencyTune{Outages: make([]Period, 3), Base: base, Candidates: []*Candidate{a, b, lint}, Best: -1}
	dt.choose()
	want := []int{1, 1, 0} // holding out 0 or 1 leaves a's false trip in: b
	for k, f := range dt.Folds {
		if f.Chosen != want[k] {
			t.Errorf("fold %d chose %d, want %d", k, f.Chosen, want[k])
		}
	}
	if dt.Best != 1 || dt.Votes != 2 {
		t.Errorf("best %d with %d votes, want 1 with 2", dt.Best, dt.Votes)
	}
	if dt.HeldOut != seg(50, 0, 1) || dt.BaseHeldOut != seg(150, 0, 0) {
		t.Errorf("held out %+v, base %+v", dt.HeldOut, dt.BaseHeldOut)
	}
}

func TestSizingRules(t *testing.T) {
	st := &depStats{calls: 1000, first: time.Unix(0, 0), last: time.Unix(1000, 0), detectors: []outageDetector{{Peak: 50}}}
	for i := range 1000 {
		st.latency.add(time.Duration(100+i/10) * time.Millisecond) // 100 ms to 199 ms
	}
	s := st.sizing()
	near := func(got, want time.Duration) bool { return got >= want && got <= want*102/100 }
	if !near(s.P50, 149*time.Millisecond) || !near(s.P995, 199*time.Millisecond) {
		t.Errorf("p50 %v, p99.5 %v; want 149ms and 199ms within 2%%", s.P50, s.P995)
	}
	if s.Timeout != 300*time.Millisecond { // 1.5 × 199.06 ms (its bucket's top) = 298.6 ms, rounded up
		t.Errorf("timeout %v, want 300ms", s.Timeout)
	}
	// 5 calls a second at peak × ~0.2 s × 2 = 2: the floor of 4. 1 a second × 0.15 s: 1.
	if s.MaxLimit != 4 || s.MinLimit != 1 || s.PeakRate != 5 || s.MeanRate != 1 {
		t.Errorf("limits %d–%d, rates %v %v", s.MinLimit, s.MaxLimit, s.MeanRate, s.PeakRate)
	}
}

func TestJoinOutages(t *testing.T) {
	at := func(m int) time.Time { return time.Unix(int64(m)*60, 0) }
	got := joinOutages([]Period{{at(0), at(2)}, {at(4), at(6)}, {at(20), at(20).Add(30 * time.Second)}, {at(40), at(42)}}, IncidentGap)
	want := []Period{{at(0), at(6)}, {at(40), at(42)}} // 2 min apart: one; 30 s alone: a blip
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestGenerateIsRepeatableAndReadable(t *testing.T) {
	var a, b bytes.Buffer
	outages, err := Generate(&a, GenerateConfig{Days: 1, Outages: 1, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(&b, GenerateConfig{Days: 1, Outages: 1, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the same seed wrote different records")
	}
	rs, err := ReadRecords(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(outages) != 2 || len(rs) < 5000 || rs[0].Tool == "" {
		t.Errorf("%d outages, %d records, first %+v", len(outages), len(rs), rs[0])
	}
}

// BenchmarkTune tunes a million records with DefaultTuneGrid's 108 candidates and
// the base policy: the figure docs/tuning.md quotes. Besides the wall time, which
// depends on what else the machine runs, it reports the CPU time of a run and the
// process's peak resident set, which the streaming keeps to tens of megabytes.
func BenchmarkTune(b *testing.B) {
	open := month(b, GenerateConfig{Rate: 0.276, Seed: 1}) // 30 days: about 1,000,000 records
	var before, after syscall.Rusage
	cpu := func(ru *syscall.Rusage) float64 {
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	var res *TuneResult
	for b.Loop() {
		var err error
		if res, err = Tune(open, TuneConfig{}); err != nil {
			b.Fatal(err)
		}
	}
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err == nil {
		b.ReportMetric(float64(after.Maxrss)/1024, "peak-RSS-MB")
		b.ReportMetric((cpu(&after)-cpu(&before))/float64(b.N), "cpu-s/op")
	}
	b.ReportMetric(float64(res.Records), "records")
	b.ReportMetric(float64(len(DefaultTuneGrid.Policies(breaker.Policy{}))+1), "policies")
}

// TestReadRecordsIgnoresUnknownKeys reads a shadow-mode record (a would-refuse marker
// beside the call's outcome) as the call it is, and its stated delay.
func TestReadRecordsIgnoresUnknownKeys(t *testing.T) {
	line := `{"time":"2026-03-01T09:00:00Z","event":"call_outcome","dependency":"crm","tool":"lookup_customer","outcome":"FAILED",` +
		`"error_class":"http_429","elapsed_ms":20,"retry_after":30000000000,"shadow":true,"would_refuse":{"control":"breaker"}}` + "\n"
	rs, err := ReadRecords(strings.NewReader(line))
	if err != nil || len(rs) != 1 {
		t.Fatalf("%v, %d records", err, len(rs))
	}
	if r := rs[0]; r.Tool != "lookup_customer" || r.RetryAfter != 30*time.Second || r.Elapsed != 20*time.Millisecond {
		t.Errorf("%+v", r)
	}
}
