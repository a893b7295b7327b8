package sim

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
)

// Record is one recorded call to a dependency.
type Record struct {
	// End is when the call finished (slog's "time": records are written at the end).
	End        time.Time
	Dependency string
	Outcome    string
	Class      string
	Elapsed    time.Duration
	// Verdict is how the call bears on the dependency's health.
	Verdict classify.Verdict
}

// Start is when the call began.
func (r Record) Start() time.Time { return r.End.Add(-r.Elapsed) }

// ReadRecords reads call records, either agentbreaker's slog JSON records (one object a
// line, with the keys time, dependency, outcome, error_class, verdict, elapsed_ms) or a
// CSV of timestamp,dependency,outcome,latency_ms (a header line is optional; timestamps
// are RFC 3339 or Unix seconds). Lines that are not call outcomes (breaker transitions,
// short-circuits, start-up messages) are skipped; so are calls a breaker or bulkhead
// stopped, which never reached the dependency. A call logged by several of
// agentbreaker's packages is read once: from the callbacks' records when the log has
// any, else telemetry's, else the retry orchestrator's. A malformed line is an error naming its
// line number, field and value. A CSV timestamp is when the call started; a slog
// record's time is when it ended.
//
// A record that cannot be read gives a *RecordError naming its line.
func ReadRecords(r io.Reader) ([]Record, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(1)
	if len(head) > 0 && head[0] == '{' {
		return readJSONRecords(br)
	}
	return readCSVRecords(br)
}

// RecordError is a call record that could not be read.
type RecordError struct {
	Line   int // from 1
	Column int // from 1; 0 when unknown
	// Problem names the field, the value and what is wrong: `latency_ms "fast": want a
	// non-negative number`.
	Problem string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("sim: records line %d: %s", e.Line, e.Problem)
}

// Sources of call records in agentbreaker's logs, most preferred first. One call can be
// logged by the callbacks, by telemetry and by the retry orchestrator; only the most
// preferred source present in a log is read, so that no call counts twice.
const (
	sourceCallbacks = iota // event=call_outcome
	sourceTelemetry        // msg "agentbreaker: call attempt"
	sourceRetry            // one record per attempt, with "next"
	sourceOther            // any other record with dependency and outcome
	sources
)

func sourceOf(m map[string]any) int {
	if ev, _ := m["event"].(string); ev == "call_outcome" {
		return sourceCallbacks
	}
	if msg, _ := m["msg"].(string); msg == "agentbreaker: call attempt" {
		return sourceTelemetry
	}
	if _, ok := m["next"]; ok {
		return sourceRetry
	}
	return sourceOther
}

func readJSONRecords(r io.Reader) ([]Record, error) {
	var bySource [sources][]Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			re := &RecordError{Line: line, Problem: fmt.Sprintf("not a JSON object: %v", err)}
			if se, ok := errors.AsType[*json.SyntaxError](err); ok {
				re.Column = int(se.Offset)
			}
			return nil, re
		}
		dep, _ := m["dependency"].(string)
		outcome, _ := m["outcome"].(string)
		if dep == "" || outcome == "" {
			continue // not a call record
		}
		if ev, ok := m["event"].(string); ok && ev != "call_outcome" && ev != "" {
			continue // a short-circuit, rejection or refusal: the call never went out
		}
		ts, _ := m["time"].(string)
		end, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return nil, &RecordError{Line: line, Problem: fmt.Sprintf("time %q: want RFC 3339", ts)}
		}
		rec := Record{End: end, Dependency: dep, Outcome: outcome}
		rec.Class, _ = m["error_class"].(string)
		if v, ok := m["elapsed_ms"]; ok {
			f, ok := v.(float64)
			if !ok || f < 0 || math.IsInf(f, 0) {
				return nil, &RecordError{Line: line, Problem: fmt.Sprintf("elapsed_ms %v: want a non-negative number", v)}
			}
			rec.Elapsed = time.Duration(f * float64(time.Millisecond))
		}
		verdict, _ := m["verdict"].(string)
		if rec.Verdict = verdictOf(rec.Outcome, rec.Class, verdict); rec.Verdict == 0 {
			continue
		}
		src := sourceOf(m)
		bySource[src] = append(bySource[src], rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sim: records: %w", err)
	}
	for _, rs := range bySource {
		if len(rs) > 0 {
			return sortRecords(rs), nil
		}
	}
	return nil, nil
}

func readCSVRecords(r io.Reader) ([]Record, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	var out []Record
	for line := 1; ; line++ {
		row, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			if pe, ok := errors.AsType[*csv.ParseError](err); ok {
				return nil, &RecordError{Line: pe.Line, Column: pe.Column, Problem: pe.Err.Error()}
			}
			return nil, fmt.Errorf("sim: records: %w", err)
		}
		if len(row) == 1 && strings.TrimSpace(row[0]) == "" {
			continue
		}
		if line == 1 && strings.EqualFold(strings.TrimSpace(row[0]), "timestamp") {
			continue // header
		}
		if len(row) != 4 {
			return nil, &RecordError{Line: line, Problem: fmt.Sprintf("%d fields %q: want timestamp,dependency,outcome,latency_ms", len(row), row)}
		}
		end, err := parseTimestamp(strings.TrimSpace(row[0]))
		if err != nil {
			return nil, &RecordError{Line: line, Problem: fmt.Sprintf("timestamp %q: want RFC 3339 or Unix seconds", row[0])}
		}
		lat, err := strconv.ParseFloat(strings.TrimSpace(row[3]), 64)
		if err != nil || lat < 0 || math.IsInf(lat, 0) || math.IsNaN(lat) {
			return nil, &RecordError{Line: line, Problem: fmt.Sprintf("latency_ms %q: want a non-negative number", row[3])}
		}
		dep, outcome := strings.TrimSpace(row[1]), strings.TrimSpace(row[2])
		if dep == "" {
			return nil, &RecordError{Line: line, Problem: fmt.Sprintf("dependency %q: must not be empty", row[1])}
		}
		v := verdictOf(strings.ToUpper(outcome), "", "")
		switch strings.ToLower(outcome) {
		case "ok", "success", "succeeded", "healthy":
			v = classify.Healthy
		case "error", "failure", "failed", "timeout", "unknown", "counts":
			v = classify.Counts
		case "neutral", "canceled", "cancelled", "ignored":
			v = classify.Neutral
		case "failed_before_send":
		default:
			return nil, &RecordError{Line: line, Problem: fmt.Sprintf("outcome %q: want SUCCEEDED, FAILED, UNKNOWN, FAILED_BEFORE_SEND, ok, error or timeout", outcome)}
		}
		out = append(out, Record{End: end.Add(time.Duration(lat * float64(time.Millisecond))), Dependency: dep,
			Outcome: strings.ToUpper(outcome), Elapsed: time.Duration(lat * float64(time.Millisecond)), Verdict: v})
	}
	return sortRecords(out), nil
}

func parseTimestamp(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return time.Time{}, fmt.Errorf("bad timestamp")
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

// verdictOf decides how a record bears on health: the record's own verdict when it has
// one, else its error class's default verdict, else its outcome (SUCCEEDED is healthy,
// FAILED and UNKNOWN count). A FAILED_BEFORE_SEND call stopped by a breaker or bulkhead
// never reached the dependency and gives 0: the record is skipped.
func verdictOf(outcome, class, verdict string) classify.Verdict {
	switch verdict {
	case "healthy":
		return classify.Healthy
	case "counts":
		return classify.Counts
	case "neutral":
		return classify.Neutral
	}
	if class == string(classify.ClassBreakerOpen) || class == string(classify.ClassBulkheadFull) {
		return 0
	}
	if class != "" && class != string(classify.ClassNone) {
		return classify.ForClass(classify.Class(class)).Verdict
	}
	switch outcome {
	case "SUCCEEDED":
		return classify.Healthy
	case "FAILED", "UNKNOWN", "FAILED_BEFORE_SEND":
		return classify.Counts
	}
	return 0
}

func sortRecords(rs []Record) []Record {
	slices.SortStableFunc(rs, func(a, b Record) int { return a.Start().Compare(b.Start()) })
	return rs
}

// Period is a span of time.
type Period struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

func (p Period) contains(t time.Time) bool { return !t.Before(p.Start) && t.Before(p.End) }

// DetectOutages finds the spans where the recorded dependency was failing: 10 s bins
// with at least 3 measured calls of which at least half count as failures, joined when
// at most one bin apart.
func DetectOutages(rs []Record) []Period {
	if len(rs) == 0 {
		return nil
	}
	origin := rs[0].Start().Truncate(BinWidth)
	type bin struct{ n, fails int }
	bins := map[int]*bin{}
	last := 0
	for _, r := range rs {
		if r.Verdict == classify.Neutral {
			continue
		}
		i := int(r.Start().Sub(origin) / BinWidth)
		b := bins[i]
		if b == nil {
			b = &bin{}
			bins[i] = b
		}
		b.n++
		if r.Verdict == classify.Counts {
			b.fails++
		}
		last = max(last, i)
	}
	var out []Period
	open, gap := -1, 0
	for i := 0; i <= last+2; i++ {
		b := bins[i]
		bad := b != nil && b.n >= 3 && 2*b.fails >= b.n
		switch {
		case bad && open < 0:
			open, gap = i, 0
		case bad:
			gap = 0
		case open >= 0:
			gap++
			if gap > 1 {
				end := i - gap + 1
				out = append(out, Period{Start: origin.Add(time.Duration(open) * BinWidth), End: origin.Add(time.Duration(end) * BinWidth)})
				open = -1
			}
		}
	}
	return out
}

// ReplayResult is what one policy would have done with the recorded calls.
type ReplayResult struct {
	Dependency string     `json:"dependency"`
	Policy     PolicyInfo `json:"policy"`
	Calls      int        `json:"calls"`
	Outages    []Period   `json:"outages"`
	// Trips are the instants the breaker would have opened from closed.
	Trips []time.Time `json:"trips"`
	// TripAfterOnset is, per outage, how long after its start the breaker first opened
	// in it (null when it did not).
	TripAfterOnset []*float64 `json:"trip_after_onset_s"`
	// OutageCallsSent and OutageCallsSaved count the calls during outages that would
	// have reached the dependency, and those the breaker would have answered at once.
	OutageCallsSent  int `json:"outage_calls_sent"`
	OutageCallsSaved int `json:"outage_calls_saved"`
	// FalseTrips counts trips outside any outage; HealthyRejected the calls of healthy
	// periods the breaker would have refused.
	FalseTrips      int `json:"false_trips"`
	HealthyRejected int `json:"healthy_rejected"`
	// Warning says why the figures may mislead, when something in the records suggests
	// it.
	Warning string `json:"warning,omitempty"`
}

// Replay runs the records of one dependency through a real breaker with policy p on the
// simulator's event loop: each call asks for a permit at its start and reports its
// recorded verdict at its end. The traffic is taken as given: a call the breaker
// refuses is assumed to have been made anyway (the model does not re-issue differently),
// and a refused call's recorded outcome is not reported.
func Replay(rs []Record, dependency string, p breaker.Policy, outages []Period) (*ReplayResult, error) {
	p = simPolicy(p)
	var mine []Record
	for _, r := range rs {
		if r.Dependency == dependency {
			mine = append(mine, r)
		}
	}
	res := &ReplayResult{Dependency: dependency, Policy: policyInfo(p), Calls: len(mine), Outages: outages,
		TripAfterOnset: make([]*float64, len(outages)), Trips: []time.Time{}}
	if len(mine) == 0 {
		return res, nil
	}
	if !slices.ContainsFunc(mine, func(r Record) bool { return r.Verdict == classify.Healthy }) {
		res.Warning = "no successful call in the records: agentbreaker logs successes at debug level, " +
			"so a log kept at info level holds only failures and every policy looks like it should trip"
	}
	e := newEngine(mine[0].Start())
	b, err := breaker.New(breaker.Config{Name: dependency, Policy: p, Clock: e.clk,
		OnStateChange: []func(breaker.Event){func(ev breaker.Event) {
			if ev.To != breaker.Open || ev.From == breaker.HalfOpen || ev.From == breaker.Open {
				return
			}
			res.Trips = append(res.Trips, ev.At)
			for i, o := range outages {
				// A trip on the outage's last failures, reported just after it, is no false trip.
				if (Period{Start: o.Start, End: o.End.Add(BinWidth)}).contains(ev.At) {
					if res.TripAfterOnset[i] == nil {
						v := ms(ev.At.Sub(o.Start))
						res.TripAfterOnset[i] = &v
					}
					return
				}
			}
			res.FalseTrips++
		}}})
	if err != nil {
		return nil, err
	}
	inOutage := func(t time.Time) bool {
		for _, o := range outages {
			if o.contains(t) {
				return true
			}
		}
		return false
	}
	for _, r := range mine {
		r := r
		e.at(r.Start(), func() {
			permit, err := b.Allow()
			down := inOutage(r.Start())
			if err != nil {
				if down {
					res.OutageCallsSaved++
				} else {
					res.HealthyRejected++
				}
				return
			}
			if down {
				res.OutageCallsSent++
			}
			e.at(r.End, func() {
				switch r.Verdict {
				case classify.Healthy:
					permit.Success()
				case classify.Counts:
					permit.Failure()
				default:
					permit.Ignore()
				}
			})
		})
	}
	e.run(mine[len(mine)-1].End.Add(time.Second), nil)
	return res, nil
}

// SweepGrid is the grid of thresholds Sweep tries.
type SweepGrid struct {
	FailureRates []float64
	MinimumCalls []int
	Windows      []time.Duration
}

// DefaultSweepGrid is small on purpose: 3 rates × 4 volume gates × 3 windows.
var DefaultSweepGrid = SweepGrid{
	FailureRates: []float64{0.25, 0.5, 0.75},
	MinimumCalls: []int{5, 10, 20, 50},
	Windows:      []time.Duration{10 * time.Second, 30 * time.Second, 60 * time.Second},
}

// RecommendationRule says how Sweep picks, in words, for the report.
const RecommendationRule = "fewest false trips; then fewest misjudged calls (calls sent to the dependency during outages " +
	"plus healthy calls refused); then the larger volume gate and the longer window (more evidence per decision)"

// Sweep replays the records under every policy of the grid (the other fields from base)
// and returns the results sorted best first by RecommendationRule.
func Sweep(rs []Record, dependency string, base breaker.Policy, grid SweepGrid) ([]*ReplayResult, error) {
	outages := DetectOutages(filter(rs, dependency))
	var out []*ReplayResult
	for _, w := range grid.Windows {
		for _, mc := range grid.MinimumCalls {
			for _, fr := range grid.FailureRates {
				p := base
				p.FailureRateThreshold, p.MinimumCalls, p.Window = fr, mc, w
				if err := p.WithDefaults().Validate(); err != nil {
					return nil, err
				}
				r, err := Replay(rs, dependency, p, outages)
				if err != nil {
					return nil, err
				}
				out = append(out, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *ReplayResult) int {
		if c := a.FalseTrips - b.FalseTrips; c != 0 {
			return c
		}
		if c := (a.OutageCallsSent + a.HealthyRejected) - (b.OutageCallsSent + b.HealthyRejected); c != 0 {
			return c
		}
		if c := b.Policy.MinimumCalls - a.Policy.MinimumCalls; c != 0 {
			return c
		}
		wa, _ := time.ParseDuration(a.Policy.Window)
		wb, _ := time.ParseDuration(b.Policy.Window)
		return int(wb - wa)
	})
	return out, nil
}

func filter(rs []Record, dep string) []Record {
	var out []Record
	for _, r := range rs {
		if r.Dependency == dep {
			out = append(out, r)
		}
	}
	return out
}

// Dependencies returns the dependencies in the records, most calls first.
func Dependencies(rs []Record) []string {
	n := map[string]int{}
	for _, r := range rs {
		n[r.Dependency]++
	}
	deps := make([]string, 0, len(n))
	for d := range n {
		deps = append(deps, d)
	}
	slices.SortFunc(deps, func(a, b string) int {
		if n[a] != n[b] {
			return n[b] - n[a]
		}
		return strings.Compare(a, b)
	})
	return deps
}
