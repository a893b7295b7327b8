package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
)

// HangIncident is the first design document's incident reduced to its calls: a
// dependency answering in Latency starts hanging at Onset, and every call from then
// waits for the tool timeout, until the breaker trips. The rows are agentbreaker's
// callbacks with the document's policy (DefaultPolicy) and a bulkhead of Bulkhead,
// without and with the adaptive limit.
type HangIncident struct {
	// Rate is calls per second (Poisson). Defaults to 2: the simulator's incident, one
	// turn a second with two sub-agents calling.
	Rate float64
	// Latency is the healthy latency; each call's is drawn within ±10%. Defaults to
	// 200ms.
	Latency time.Duration
	// Onset is when the dependency starts hanging. Defaults to 2m.
	Onset time.Duration
	// Timeout is the tool timeout. Defaults to 5s.
	Timeout time.Duration
	// Bulkhead is the bulkhead's size in both rows. Defaults to 20.
	Bulkhead int
	// Adaptive is the adaptive row's limit. Zero fields take adaptivelimit's defaults.
	Adaptive adaptivelimit.Config
	// Seed makes the arrivals repeatable. Defaults to 1.
	Seed uint64
}

// Hang-incident rows.
const (
	HangToday    = "agentbreaker-policy"
	HangAdaptive = "agentbreaker-policy-adaptive"
)

// HangRow is one row: when the breaker tripped after the onset, and what the hang cost
// until then.
type HangRow struct {
	Name, Description string
	// TripAfter is the trip's time after the onset (0: it never tripped).
	TripAfter time.Duration
	// BlockedWorkerSeconds is the time workers spent waiting on calls between the onset
	// and the trip.
	BlockedWorkerSeconds float64
	// Sent is how many calls reached the hanging dependency before the trip; Refused
	// how many the guard refused at once in that time.
	Sent, Refused int
}

// HangResult is the incident's rows: today's, then with the adaptive limit.
type HangResult struct {
	Incident HangIncident
	Policy   breaker.Policy
	Rows     []HangRow
}

// RunHangIncident runs the incident once per row on the same arrivals.
func RunHangIncident(h HangIncident) (*HangResult, error) {
	if h.Rate == 0 {
		h.Rate = 2
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&h.Latency, 200 * time.Millisecond}, {&h.Onset, 2 * time.Minute}, {&h.Timeout, 5 * time.Second}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if h.Bulkhead == 0 {
		h.Bulkhead = 20
	}
	if h.Seed == 0 {
		h.Seed = 1
	}
	switch {
	case math.IsNaN(h.Rate) || h.Rate <= 0 || h.Rate > 10000:
		return nil, &ConfigError{Package: "sim", Field: "Rate", Value: h.Rate, Problem: "must be above 0 and at most 10000"}
	case h.Timeout <= h.Latency:
		return nil, &ConfigError{Package: "sim", Field: "Timeout", Value: h.Timeout, Problem: "must be above Latency"}
	case h.Bulkhead < 1:
		return nil, &ConfigError{Package: "sim", Field: "Bulkhead", Value: h.Bulkhead, Problem: "must be positive"}
	}
	policy, err := Scenario{}.WithDefaults().userConfig()
	if err != nil {
		return nil, err
	}
	res := &HangResult{Incident: h}
	for _, adaptive := range []bool{false, true} {
		row, p, err := h.run(policy, adaptive)
		if err != nil {
			return nil, err
		}
		res.Policy = p
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

func (h HangIncident) run(policy breaker.Policy, adaptive bool) (HangRow, breaker.Policy, error) {
	e := newEngine(Start)
	onset := Start.Add(h.Onset)
	var trip time.Time
	onChange := func(ev breaker.Event) {
		if trip.IsZero() && ev.To == breaker.Open && !ev.At.Before(onset) {
			trip = ev.At
		}
	}
	var ad *adaptivelimit.Config
	row := HangRow{Name: HangToday, Description: fmt.Sprintf("agentbreaker callbacks, the document's policy, bulkhead %d", h.Bulkhead)}
	if adaptive {
		c := h.Adaptive
		ad = &c
		row.Name = HangAdaptive
		row.Description += ", adaptive limit " + describeAdaptive(h.Adaptive)
	}
	g, err := newCliffGuard(e.clk, policy, h.Bulkhead, ad, h.Timeout, onChange)
	if err != nil {
		return row, breaker.Policy{}, err
	}
	type span struct{ from, to time.Time }
	var spans []span
	rnd := rand.New(rand.NewPCG(h.Seed, 0x4a46))
	end := onset.Add(10 * time.Minute)
	for t := Start; ; {
		t = t.Add(time.Duration(rnd.ExpFloat64() / h.Rate * float64(time.Second)))
		if !t.Before(end) {
			break
		}
		lat := time.Duration(float64(h.Latency) * (0.9 + 0.2*rnd.Float64()))
		at := t
		e.at(at, func() {
			before := trip.IsZero() && !at.Before(onset)
			p, ok := g.Acquire()
			if !ok {
				if before {
					row.Refused++
				}
				return
			}
			hang := !at.Before(onset)
			d := lat
			if hang {
				d = h.Timeout
				if before {
					row.Sent++
				}
			}
			spans = append(spans, span{at, at.Add(d)})
			e.at(at.Add(d), func() { p.Done(hang) })
		})
	}
	e.run(end.Add(h.Timeout), nil)
	if err := g.check(); err != nil {
		return row, breaker.Policy{}, err
	}
	if !trip.IsZero() {
		row.TripAfter = trip.Sub(onset)
		for _, s := range spans {
			from, to := maxTime(s.from, onset), minTime(s.to, trip)
			if to.After(from) {
				row.BlockedWorkerSeconds += to.Sub(from).Seconds()
			}
		}
		row.BlockedWorkerSeconds = math.Round(row.BlockedWorkerSeconds*10) / 10
	}
	return row, g.breaker.Policy(), nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Row returns the row called name.
func (r *HangResult) Row(name string) (HangRow, bool) {
	for _, row := range r.Rows {
		if row.Name == name {
			return row, true
		}
	}
	return HangRow{}, false
}

// Table prints the rows.
func (r *HangResult) Table() string {
	h := r.Incident
	var b strings.Builder
	fmt.Fprintf(&b, "Hanging calls: %.0f calls/s answered in %s, every call hangs from the onset until the %s tool timeout; breaker: %s\n\n",
		h.Rate, shortDuration(h.Latency), shortDuration(h.Timeout), DescribePolicy(r.Policy))
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "%s: %s\n", row.Name, row.Description)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "row\ttrip after onset\tcalls sent before the trip\trefused\tblocked worker-s before the trip\t")
	for _, row := range r.Rows {
		trip := "-"
		if row.TripAfter > 0 {
			trip = fmt.Sprintf("%.1fs", row.TripAfter.Seconds())
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t\n", row.Name, trip, row.Sent, row.Refused, row.BlockedWorkerSeconds)
	}
	_ = tw.Flush()
	return b.String()
}
