package sim

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
)

// Latency-cliff rows: no limit, agentbreaker's fixed bulkhead, agentbreaker's adaptive
// limit (then any LimitPeers).
const (
	CliffNoLimit  = "no-limit"
	CliffBulkhead = "agentbreaker-bulkhead"
	CliffAdaptive = "agentbreaker-adaptive"
)

// Cliff is a latency cliff: a dependency that serves Capacity calls at once in Service
// each and queues the rest in arrival order, so that past Capacity every call waits for
// the queue ahead of it, up to the tool timeout. It never learns that a caller gave
// up: a call that timed out still takes its turn, as a server behind a queue does. The
// load rises from BaseRate to PeakRate for Peak, then falls back.
type Cliff struct {
	// Capacity is how many calls the dependency serves at once. Defaults to 5.
	Capacity int
	// Service is how long one call takes once served; each call's is drawn within
	// ±10% of it. Defaults to 100ms: the no-load latency.
	Service time.Duration
	// Timeout is the tool timeout. Defaults to 5s.
	Timeout time.Duration
	// BaseRate and PeakRate are calls per second (Poisson arrivals) before and after
	// the peak and during it. Default to half the capacity and twice the capacity.
	BaseRate, PeakRate float64
	// Before, Peak and After are the phases' lengths. Default to 1m, 2m and 1m.
	Before, Peak, After time.Duration
	// Bulkhead is the fixed bulkhead's size. Defaults to 20.
	Bulkhead int
	// Adaptive is the adaptive row's limit. Zero fields take adaptivelimit's defaults.
	Adaptive adaptivelimit.Config
	// Seed makes the arrivals and service times repeatable. Defaults to 1.
	Seed uint64
	// Peers are rows from other libraries, run on the same arrivals. Defaults to none.
	Peers []LimitPeer
}

func (c Cliff) withDefaults() Cliff {
	if c.Capacity == 0 {
		c.Capacity = 5
	}
	if c.Service == 0 {
		c.Service = 100 * time.Millisecond
	}
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	capacity := float64(c.Capacity) / c.Service.Seconds()
	if c.BaseRate == 0 {
		c.BaseRate = capacity / 2
	}
	if c.PeakRate == 0 {
		c.PeakRate = 2 * capacity
	}
	if c.Before == 0 {
		c.Before = time.Minute
	}
	if c.Peak == 0 {
		c.Peak = 2 * time.Minute
	}
	if c.After == 0 {
		c.After = time.Minute
	}
	if c.Bulkhead == 0 {
		c.Bulkhead = 20
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

func (c Cliff) validate() error {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "sim", Field: field, Value: v, Problem: problem}
	}
	switch {
	case c.Capacity < 1 || c.Capacity > 10000:
		return bad("Capacity", c.Capacity, "must be from 1 to 10000")
	case c.Service < time.Millisecond || c.Service > time.Minute:
		return bad("Service", c.Service, "must be from 1ms to 1m")
	case c.Timeout <= c.Service || c.Timeout > time.Hour:
		return bad("Timeout", c.Timeout, "must be above Service and at most 1h")
	case math.IsNaN(c.BaseRate) || c.BaseRate <= 0 || c.BaseRate > 100000:
		return bad("BaseRate", c.BaseRate, "must be above 0 and at most 100000")
	case math.IsNaN(c.PeakRate) || c.PeakRate <= 0 || c.PeakRate > 100000:
		return bad("PeakRate", c.PeakRate, "must be above 0 and at most 100000")
	case c.Before < 0 || c.Peak <= 0 || c.After < 0 || c.Before+c.Peak+c.After > 24*time.Hour:
		return bad("Peak", c.Peak, "the phases must be positive and at most 24h together")
	case c.Bulkhead < 1:
		return bad("Bulkhead", c.Bulkhead, "must be positive")
	}
	for i, p := range c.Peers {
		if p.Name == "" || p.New == nil {
			return bad(fmt.Sprintf("Peers[%d]", i), p.Name, "needs a Name and New")
		}
	}
	return nil
}

// CliffRow is one row's measures, over the calls that arrived during the peak.
type CliffRow struct {
	Name, Description string
	// Goodput is the calls that succeeded per second of the peak.
	Goodput float64
	// P50 and P99 are the latencies of the admitted calls (a timed-out call counts at
	// the timeout).
	P50, P99 time.Duration
	// BlockedWorkerSeconds is the time workers spent waiting on admitted calls.
	BlockedWorkerSeconds float64
	// Refused is how many calls were refused at once; TimedOut how many ran into the
	// tool timeout.
	Refused, TimedOut int
	// Limit is the adaptive limit at the end of the peak (adaptive row only, else 0).
	Limit int
	// NoLoad is the adaptive limit's measured no-load latency then.
	NoLoad time.Duration
}

// CliffResult is a latency cliff's rows, in order: no limit, bulkhead, adaptive, peers.
type CliffResult struct {
	Cliff Cliff
	Rows  []CliffRow
}

// Row returns the row called name.
func (r *CliffResult) Row(name string) (CliffRow, bool) {
	for _, row := range r.Rows {
		if row.Name == name {
			return row, true
		}
	}
	return CliffRow{}, false
}

type cliffCall struct {
	at      time.Duration // arrival, from the run's start
	service time.Duration
}

// RunCliff runs the latency cliff once per row on the same arrivals. The same input
// gives the same result.
func RunCliff(c Cliff) (*CliffResult, error) {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	if _, err := adaptivelimit.New(c.Adaptive); err != nil {
		return nil, err
	}
	calls := c.arrivals()
	res := &CliffResult{Cliff: c}
	never := breaker.Policy{FailureRateThreshold: 1, MinimumCalls: 1 << 30} // the breaker stays out of it
	rows := []struct {
		name, desc string
		build      func(e *engine) (LimitGuard, func() error, *adaptivelimit.Limiter, error)
	}{
		{CliffNoLimit, "every call sent", func(*engine) (LimitGuard, func() error, *adaptivelimit.Limiter, error) {
			return noLimit{}, nil, nil, nil
		}},
		{CliffBulkhead, fmt.Sprintf("agentbreaker callbacks, bulkhead %d (today's)", c.Bulkhead), func(e *engine) (LimitGuard, func() error, *adaptivelimit.Limiter, error) {
			g, err := newCliffGuard(e.clk, never, c.Bulkhead, nil, c.Timeout, nil)
			if err != nil {
				return nil, nil, nil, err
			}
			return g, g.check, nil, nil
		}},
		{CliffAdaptive, "agentbreaker callbacks, adaptive limit " + describeAdaptive(c.Adaptive) + fmt.Sprintf(", bulkhead %d", c.Bulkhead), func(e *engine) (LimitGuard, func() error, *adaptivelimit.Limiter, error) {
			ad := c.Adaptive
			g, err := newCliffGuard(e.clk, never, c.Bulkhead, &ad, c.Timeout, nil)
			if err != nil {
				return nil, nil, nil, err
			}
			return g, g.check, g.deps.Limiter("backend"), nil
		}},
	}
	for _, p := range c.Peers {
		rows = append(rows, struct {
			name, desc string
			build      func(e *engine) (LimitGuard, func() error, *adaptivelimit.Limiter, error)
		}{p.Name, p.Description, func(e *engine) (LimitGuard, func() error, *adaptivelimit.Limiter, error) {
			return p.New(e.clk.Now), nil, nil, nil
		}})
	}
	for _, r := range rows {
		e := newEngine(Start)
		g, check, lim, err := r.build(e)
		if err != nil {
			return nil, fmt.Errorf("sim: %s: %w", r.name, err)
		}
		row := c.run(e, g, calls, lim)
		row.Name, row.Description = r.name, r.desc
		if check != nil {
			if err := check(); err != nil {
				return nil, err
			}
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// arrivals draws the calls: Poisson arrivals at each phase's rate, and service times.
func (c Cliff) arrivals() []cliffCall {
	rnd := rand.New(rand.NewPCG(c.Seed, 0xc11ff))
	end := c.Before + c.Peak + c.After
	var out []cliffCall
	for t := time.Duration(0); ; {
		rate := c.BaseRate
		if t >= c.Before && t < c.Before+c.Peak {
			rate = c.PeakRate
		}
		t += time.Duration(rnd.ExpFloat64() / rate * float64(time.Second))
		if t >= end {
			return out
		}
		s := time.Duration(float64(c.Service) * (0.9 + 0.2*rnd.Float64()))
		out = append(out, cliffCall{at: t, service: s})
	}
}

// freeAt is the dependency's servers, by when each is free again.
type freeAt []time.Time

func (h freeAt) Len() int           { return len(h) }
func (h freeAt) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h freeAt) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *freeAt) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *freeAt) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (c Cliff) run(e *engine, g LimitGuard, calls []cliffCall, lim *adaptivelimit.Limiter) CliffRow {
	servers := make(freeAt, c.Capacity)
	for i := range servers {
		servers[i] = Start
	}
	peakFrom, peakTo := Start.Add(c.Before), Start.Add(c.Before+c.Peak)
	var row CliffRow
	var lat []time.Duration
	ok := 0
	for _, cl := range calls {
		at := Start.Add(cl.at)
		e.at(at, func() {
			inPeak := !at.Before(peakFrom) && at.Before(peakTo)
			p, admitted := g.Acquire()
			if !admitted {
				if inPeak {
					row.Refused++
				}
				return
			}
			// FIFO over Capacity servers: the call starts when the first server is free.
			start := servers[0]
			if start.Before(at) {
				start = at
			}
			done := start.Add(cl.service)
			servers[0] = done
			heap.Fix(&servers, 0)
			timedOut := done.Sub(at) > c.Timeout
			end := done
			if timedOut {
				end = at.Add(c.Timeout)
			}
			e.at(end, func() {
				p.Done(timedOut)
				if !inPeak {
					return
				}
				d := end.Sub(at)
				lat = append(lat, d)
				row.BlockedWorkerSeconds += d.Seconds()
				if timedOut {
					row.TimedOut++
				} else {
					ok++
				}
			})
		})
	}
	if lim != nil {
		e.at(peakTo, func() { row.Limit, row.NoLoad = lim.Limit(), lim.NoLoad() })
	}
	e.run(Start.Add(c.Before+c.Peak+c.After+c.Timeout), nil)
	row.Goodput = float64(ok) / c.Peak.Seconds()
	row.P50, row.P99 = durQuantile(lat, 0.5), durQuantile(lat, 0.99)
	row.BlockedWorkerSeconds = math.Round(row.BlockedWorkerSeconds*10) / 10
	return row
}

// durQuantile is the q-quantile of ds by the nearest-rank method (0 for none).
func durQuantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// describeAdaptive is an adaptive limit's configuration in one line, defaults applied.
func describeAdaptive(ac adaptivelimit.Config) string {
	l, err := adaptivelimit.New(ac)
	if err != nil {
		return "(invalid)"
	}
	lo, hi := l.Bounds()
	c := l.Config()
	return fmt.Sprintf("%d..%d from %d, tolerance %g, update every %s (≥%d samples), no-load measured every %s",
		lo, hi, c.InitialLimit, c.Tolerance, shortDuration(c.UpdateInterval), c.MinSamples, shortDuration(c.NoLoadInterval))
}

// Table prints the rows.
func (r *CliffResult) Table() string {
	c := r.Cliff
	var b strings.Builder
	fmt.Fprintf(&b, "Latency cliff: serves %d calls at once in %s (no-load), queues the rest, tool timeout %s; %.0f calls/s for %s, %.0f calls/s for %s, %.0f calls/s for %s; seed %d\n",
		c.Capacity, shortDuration(c.Service), shortDuration(c.Timeout), c.BaseRate, shortDuration(c.Before), c.PeakRate, shortDuration(c.Peak), c.BaseRate, shortDuration(c.After), c.Seed)
	b.WriteString("Measured over the calls that arrived during the peak.\n\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "%s: %s\n", row.Name, row.Description)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "row\tgoodput/s\tp50\tp99\tblocked worker-s\trefused\ttimed out\t")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%.1f\t%d\t%d\t\n", row.Name, row.Goodput, cliffMs(row.P50), cliffMs(row.P99), row.BlockedWorkerSeconds, row.Refused, row.TimedOut)
	}
	_ = tw.Flush()
	if a, ok := r.Row(CliffAdaptive); ok {
		fmt.Fprintf(&b, "\nadaptive limit at the end of the peak: %d, measured no-load latency %s\n", a.Limit, cliffMs(a.NoLoad))
	}
	return b.String()
}

func cliffMs(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds())
}
