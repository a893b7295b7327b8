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
	Tool       string // "" in a CSV
	Outcome    string
	Class      string
	Elapsed    time.Duration
	// RetryAfter is the delay the dependency asked for (the log's retry_after), or 0.
	RetryAfter time.Duration
	// Verdict is how the call bears on the dependency's health.
	Verdict classify.Verdict
}

// Start is when the call began.
func (r Record) Start() time.Time { return r.End.Add(-r.Elapsed) }

// ReadRecords reads call records, either agentbreaker's slog JSON records (one object a
// line, with the keys time, dependency, outcome, error_class, verdict, elapsed_ms and,
// optionally, retry_after; other keys are ignored) or a CSV of
// timestamp,dependency,outcome,latency_ms (a header line is optional; timestamps
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
	var bySource [sources][]Record
	err := scanRecords(r, func(rec Record, src int) error {
		bySource[src] = append(bySource[src], rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, rs := range bySource {
		if len(rs) > 0 {
			return sortRecords(rs), nil
		}
	}
	return nil, nil
}

// scanRecords reads records as ReadRecords does, in the order of the input and
// unsorted, and gives each to fn with its source (a CSV's are sourceOther). It holds
// one line at a time, so Tune can stream a month of calls.
func scanRecords(r io.Reader, fn func(Record, int) error) error {
	br := bufio.NewReader(r)
	head, _ := br.Peek(1)
	if len(head) > 0 && head[0] == '{' {
		return scanJSONRecords(br, fn)
	}
	return scanCSVRecords(br, fn)
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

// jsonRecord holds the keys of a log line that a Record is read from; any other key
// (request IDs, a shadow mode's would-refuse marker) is ignored.
type jsonRecord struct {
	Time       any             `json:"time"`
	Msg        string          `json:"msg"`
	Event      *string         `json:"event"`
	Dependency string          `json:"dependency"`
	Tool       string          `json:"tool"`
	Outcome    string          `json:"outcome"`
	ErrorClass string          `json:"error_class"`
	Verdict    string          `json:"verdict"`
	ElapsedMS  any             `json:"elapsed_ms"`
	RetryAfter any             `json:"retry_after"`
	Next       json.RawMessage `json:"next"`
}

func (m *jsonRecord) source() int {
	switch {
	case m.Event != nil && *m.Event == "call_outcome":
		return sourceCallbacks
	case m.Msg == "agentbreaker: call attempt":
		return sourceTelemetry
	case m.Next != nil:
		return sourceRetry
	}
	return sourceOther
}

func scanJSONRecords(r io.Reader, fn func(Record, int) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var m jsonRecord
		if err := json.Unmarshal(b, &m); err != nil {
			re := &RecordError{Line: line, Problem: fmt.Sprintf("not a JSON object: %v", err)}
			if se, ok := errors.AsType[*json.SyntaxError](err); ok {
				re.Column = int(se.Offset)
			}
			if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
				re.Problem = fmt.Sprintf("%s: a JSON %s, want a %v", te.Field, te.Value, te.Type)
			}
			return re
		}
		rec, ok, err := m.record(line)
		if err != nil {
			return err
		}
		if ok {
			if err := fn(rec, m.source()); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("sim: records: %w", err)
	}
	return nil
}

// record converts a log line read at line; false when it is no call that went out.
func (m *jsonRecord) record(line int) (Record, bool, error) {
	if m.Dependency == "" || m.Outcome == "" {
		return Record{}, false, nil // not a call record
	}
	if m.Event != nil && *m.Event != "call_outcome" && *m.Event != "" {
		return Record{}, false, nil // a short-circuit, rejection or refusal: the call never went out
	}
	ts, _ := m.Time.(string)
	end, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return Record{}, false, &RecordError{Line: line, Problem: fmt.Sprintf("time %q: want RFC 3339", ts)}
	}
	rec := Record{End: end, Dependency: m.Dependency, Tool: m.Tool, Outcome: m.Outcome, Class: m.ErrorClass}
	for _, f := range []struct {
		key   string
		v     any
		unit  float64
		field *time.Duration
	}{{"elapsed_ms", m.ElapsedMS, float64(time.Millisecond), &rec.Elapsed}, {"retry_after", m.RetryAfter, 1, &rec.RetryAfter}} {
		if f.v == nil {
			continue
		}
		x, ok := f.v.(float64)
		if !ok || x < 0 || math.IsInf(x, 0) {
			return Record{}, false, &RecordError{Line: line, Problem: fmt.Sprintf("%s %v: want a non-negative number", f.key, f.v)}
		}
		*f.field = time.Duration(x * f.unit)
	}
	if rec.Verdict = verdictOf(rec.Outcome, rec.Class, m.Verdict); rec.Verdict == 0 {
		return Record{}, false, nil
	}
	return rec, true, nil
}

func scanCSVRecords(r io.Reader, fn func(Record, int) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	for line := 1; ; line++ {
		row, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if pe, ok := errors.AsType[*csv.ParseError](err); ok {
				return &RecordError{Line: pe.Line, Column: pe.Column, Problem: pe.Err.Error()}
			}
			return fmt.Errorf("sim: records: %w", err)
		}
		if len(row) == 1 && strings.TrimSpace(row[0]) == "" {
			continue
		}
		if line == 1 && strings.EqualFold(strings.TrimSpace(row[0]), "timestamp") {
			continue // header
		}
		rec, err := csvRecord(row, line)
		if err != nil {
			return err
		}
		if err := fn(rec, sourceOther); err != nil {
			return err
		}
	}
}

func csvRecord(row []string, line int) (Record, error) {
	if len(row) != 4 {
		return Record{}, &RecordError{Line: line, Problem: fmt.Sprintf("%d fields %q: want timestamp,dependency,outcome,latency_ms", len(row), row)}
	}
	end, err := parseTimestamp(strings.TrimSpace(row[0]))
	if err != nil {
		return Record{}, &RecordError{Line: line, Problem: fmt.Sprintf("timestamp %q: want RFC 3339 or Unix seconds", row[0])}
	}
	lat, err := strconv.ParseFloat(strings.TrimSpace(row[3]), 64)
	if err != nil || lat < 0 || math.IsInf(lat, 0) || math.IsNaN(lat) {
		return Record{}, &RecordError{Line: line, Problem: fmt.Sprintf("latency_ms %q: want a non-negative number", row[3])}
	}
	dep, outcome := strings.TrimSpace(row[1]), strings.TrimSpace(row[2])
	if dep == "" {
		return Record{}, &RecordError{Line: line, Problem: fmt.Sprintf("dependency %q: must not be empty", row[1])}
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
		return Record{}, &RecordError{Line: line, Problem: fmt.Sprintf("outcome %q: want SUCCEEDED, FAILED, UNKNOWN, FAILED_BEFORE_SEND, ok, error or timeout", outcome)}
	}
	elapsed := time.Duration(lat * float64(time.Millisecond))
	return Record{End: end.Add(elapsed), Dependency: dep, Outcome: strings.ToUpper(outcome), Elapsed: elapsed, Verdict: v}, nil
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
	var d outageDetector
	for _, r := range rs {
		d.add(r)
	}
	return d.finish()
}

// outageDetector is DetectOutages on a stream: it holds the bins of the last
// detectorLag only, closing a bin once the records (which arrive in about the order
// they ended) can no longer start in it. A record that starts in a closed bin counts
// in the oldest open one.
type outageDetector struct {
	width   time.Duration // of a bin; 0 means BinWidth
	bins    map[int64]*outageBin
	next    int64 // the first bin not closed yet
	started bool
	open    int64 // the first bad bin of the outage being read, or -1
	gap     int64
	out     []Period
	// Peak is the most calls (any verdict) that started in one bin.
	Peak int
}

type outageBin struct{ n, fails, all int }

// detectorLag is how long a bin stays open: longer than any call.
const detectorLag = 30 * time.Minute

func (d *outageDetector) add(r Record) {
	if d.width == 0 {
		d.width = BinWidth
	}
	i := r.Start().UnixNano() / int64(d.width)
	if !d.started {
		d.started, d.bins, d.next, d.open = true, map[int64]*outageBin{}, i, -1
	}
	i = max(i, d.next)
	b := d.bins[i]
	if b == nil {
		b = &outageBin{}
		d.bins[i] = b
	}
	b.all++
	if r.Verdict != classify.Neutral {
		b.n++
		if r.Verdict == classify.Counts {
			b.fails++
		}
	}
	d.closeBefore(i - int64(detectorLag/d.width))
}

// closeBefore closes the bins before bin i.
func (d *outageDetector) closeBefore(i int64) {
	for ; d.next < i; d.next++ {
		b := d.bins[d.next]
		delete(d.bins, d.next)
		bad := b != nil && b.n >= 3 && 2*b.fails >= b.n
		if b != nil {
			d.Peak = max(d.Peak, b.all)
		}
		switch {
		case bad && d.open < 0:
			d.open, d.gap = d.next, 0
		case bad:
			d.gap = 0
		case d.open >= 0:
			d.gap++
			if d.gap > 1 {
				end := d.next - d.gap + 1
				d.out = append(d.out, Period{Start: time.Unix(0, d.open*int64(d.width)).UTC(), End: time.Unix(0, end*int64(d.width)).UTC()})
				d.open = -1
			}
		}
	}
}

// finish closes every bin and returns the outages found.
func (d *outageDetector) finish() []Period {
	last := d.next
	for i := range d.bins {
		last = max(last, i)
	}
	d.closeBefore(last + 3)
	return d.out
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

// Replay runs the records of one dependency through a real breaker with policy p, as
// Tune replays its candidates: each call asks for a permit at its start and reports
// its recorded verdict at its end. The traffic is taken as given: a call the breaker
// refuses is assumed to have been made anyway (the model does not re-issue
// differently), and a refused call's recorded outcome is not reported.
func Replay(rs []Record, dependency string, p breaker.Policy, outages []Period) (*ReplayResult, error) {
	mine := filter(rs, dependency)
	res := &ReplayResult{Dependency: dependency, Policy: policyInfo(simPolicy(p)), Calls: len(mine), Outages: outages,
		TripAfterOnset: make([]*float64, len(outages)), Trips: []time.Time{}}
	if len(mine) == 0 {
		return res, nil
	}
	if !slices.ContainsFunc(mine, func(r Record) bool { return r.Verdict == classify.Healthy }) {
		res.Warning = "no successful call in the records: agentbreaker logs successes at debug level, " +
			"so a log kept at info level holds only failures and every policy looks like it should trip"
	}
	dt := &DependencyTune{Dependency: dependency, Outages: outages, from: mine[0].Start()}
	if len(outages) == 0 {
		dt.Outages = []Period{{}} // one segment, with an outage at no time
	}
	dt.Base = &Candidate{policy: simPolicy(p), Segments: make([]Segment, len(dt.Outages))}
	sh, err := newShard([]*DependencyTune{dt}, 0, 1)
	if err != nil {
		return nil, err
	}
	for _, r := range sortRecords(slices.Clone(mine)) {
		sh.deps[0].call(r)
	}
	sh.deps[0].settle(time.Time{}, true)
	c := dt.Base
	res.Trips = append(res.Trips, c.trips...)
	for i := range outages {
		res.TripAfterOnset[i] = c.Segments[i].TripAfterOnset
	}
	t := c.without(-1)
	res.OutageCallsSent, res.OutageCallsSaved, res.FalseTrips, res.HealthyRejected = t.DeadSent, t.Saved, t.FalseTrips, t.HealthyRefused
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
