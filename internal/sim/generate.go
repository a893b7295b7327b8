package sim

import (
	"bufio"
	"container/heap"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// GenerateConfig says what traffic Generate writes. Zero values mean defaults.
type GenerateConfig struct {
	// Start is when the recording begins. Defaults to 2026-03-01T00:00:00Z.
	Start time.Time
	// Days is how long it lasts. Defaults to 30.
	Days int
	// Seed seeds every draw: the same config writes the same bytes. Defaults to 0.
	Seed uint64
	// Rate is the busiest dependency's mean calls a second (crm's; invoices gets 40%
	// of it). Defaults to 0.1.
	Rate float64
	// Outages is how many outages each dependency has, of the shapes in OutageShapes
	// in turn. Defaults to 10.
	Outages int
}

// OutageShapes are the kinds of outage Generate draws, in turn.
var OutageShapes = []string{"hard down", "partial", "slow", "flapping", "429 storm"}

// GeneratedOutage is one outage Generate put in the traffic.
type GeneratedOutage struct {
	Dependency string
	Shape      string
	Period
}

// genDep is a dependency of the generated traffic.
type genDep struct {
	name, tool string
	share      float64 // of the rate
	median     float64 // healthy latency, ms
}

var genDeps = []genDep{{"crm", "lookup_customer", 1, 80}, {"invoices", "get_invoice", 0.4, 50}}

// Generate writes a recording of cfg.Days of calls to two dependencies in the JSON log
// format of the callbacks (see ReadRecords), in order of end: a daily load cycle
// (peak at 15:00, a ninth of it at 03:00), 1.5% background failures, a 90 s burst of
// 40% failures to crm every other day, a latency tail, and cfg.Outages outages per dependency
// of each shape in OutageShapes. It returns the outages.
func Generate(w io.Writer, cfg GenerateConfig) ([]GeneratedOutage, error) {
	cfg = cfg.withDefaults()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	end := cfg.Start.Add(time.Duration(cfg.Days) * 24 * time.Hour)
	outages := genOutages(rng, cfg, end)
	bw := bufio.NewWriterSize(w, 1<<16)
	var q genQueue
	peak := 1.8 * cfg.Rate * 1.4 // the busiest second of the cycle, every dependency
	var buf []byte
	for t := cfg.Start; ; {
		t = t.Add(time.Duration(rng.ExpFloat64() / peak * float64(time.Second)))
		for q.Len() > 0 && !q[0].end.After(t) || q.Len() > 0 && !t.Before(end) {
			buf = heap.Pop(&q).(genCall).append(buf[:0])
			if _, err := bw.Write(buf); err != nil {
				return nil, err
			}
		}
		if !t.Before(end) {
			break
		}
		d := genDeps[0]
		if rng.Float64() >= 1/1.4 {
			d = genDeps[1]
		}
		if rng.Float64() >= cycle(t)/1.8 {
			continue // thinning: the daily cycle
		}
		heap.Push(&q, genCallAt(rng, d, t, outages))
	}
	return outages, bw.Flush()
}

func (cfg GenerateConfig) withDefaults() GenerateConfig {
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	}
	if cfg.Days == 0 {
		cfg.Days = 30
	}
	if cfg.Rate == 0 {
		cfg.Rate = 0.1
	}
	if cfg.Outages == 0 {
		cfg.Outages = 10
	}
	return cfg
}

// cycle is the load at t relative to the mean: 1.8 at 15:00, 0.2 at 03:00.
func cycle(t time.Time) float64 {
	h := float64(t.Hour()) + float64(t.Minute())/60
	return 1 + 0.8*math.Sin(2*math.Pi*(h-9)/24)
}

// genOutages places each dependency's outages one to a slot of the span, in daytime,
// 5 to 40 minutes long.
func genOutages(rng *rand.Rand, cfg GenerateConfig, end time.Time) []GeneratedOutage {
	var out []GeneratedOutage
	slot := end.Sub(cfg.Start) / time.Duration(cfg.Outages)
	for _, d := range genDeps {
		for k := range cfg.Outages {
			day := cfg.Start.Add(time.Duration(k)*slot + time.Duration(rng.Float64()*float64(slot-24*time.Hour))).Truncate(24 * time.Hour)
			start := day.Add(time.Duration((8 + 10*rng.Float64()) * float64(time.Hour))).Truncate(time.Second)
			long := time.Duration(5+rng.IntN(36)) * time.Minute
			out = append(out, GeneratedOutage{Dependency: d.name, Shape: OutageShapes[k%len(OutageShapes)],
				Period: Period{Start: start, End: start.Add(long)}})
		}
	}
	return out
}

// genCall is one generated call.
type genCall struct {
	end            time.Time
	dep            genDep
	outcome, class string
	elapsed        time.Duration
	retryAfter     time.Duration
	healthy        bool
}

// genCallAt draws the outcome of a call to d that starts at t.
func genCallAt(rng *rand.Rand, d genDep, t time.Time, outages []GeneratedOutage) genCall {
	c := genCall{dep: d, outcome: "SUCCEEDED", class: "none", healthy: true,
		elapsed: time.Duration(d.median * math.Exp(0.5*rng.NormFloat64()) * float64(time.Millisecond))}
	fail := func(outcome, class string, elapsed time.Duration) {
		c.outcome, c.class, c.elapsed, c.healthy = outcome, class, elapsed, false
	}
	shape := ""
	for _, o := range outages {
		if o.Dependency == d.name && o.contains(t) {
			shape = o.Shape
			if shape == "flapping" && t.Sub(o.Start)/(45*time.Second)%2 == 1 {
				shape = "" // up for 45 s of every 90
			}
		}
	}
	burst := t.Unix()%(2*86400) >= 11*3600 && t.Unix()%(2*86400) < 11*3600+90 && d.name == "crm"
	switch {
	case shape == "hard down" || shape == "flapping":
		fail("FAILED", "connection_refused", time.Duration(5+rng.IntN(15))*time.Millisecond)
	case shape == "partial" && rng.Float64() < 0.6, burst && rng.Float64() < 0.4:
		fail("FAILED", "http_5xx", c.elapsed)
	case shape == "slow" && rng.Float64() < 0.8:
		fail("UNKNOWN", "timeout", 5*time.Second)
	case shape == "slow":
		c.elapsed = time.Duration(2000+rng.IntN(2000)) * time.Millisecond
	case shape == "429 storm" && rng.Float64() < 0.9:
		fail("FAILED", "http_429", c.elapsed/4)
		c.retryAfter = 30 * time.Second
	case rng.Float64() < 0.015:
		fail("FAILED", "http_5xx", c.elapsed)
	}
	c.end = t.Add(c.elapsed)
	return c
}

// append writes c as the callbacks log it.
func (c genCall) append(b []byte) []byte {
	b = append(b, `{"time":"`...)
	b = c.end.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	level, verdict := "DEBUG", "healthy"
	if !c.healthy {
		level, verdict = "INFO", "counts"
	}
	b = fmt.Appendf(b, `","level":"%s","msg":"agentbreaker: tool call finished","event":"call_outcome","dependency":"%s","tool":"%s","outcome":"%s","error_class":"%s","verdict":"%s","elapsed_ms":`,
		level, c.dep.name, c.dep.tool, c.outcome, c.class, verdict)
	b = strconv.AppendInt(b, c.elapsed.Milliseconds(), 10)
	if c.retryAfter > 0 {
		b = append(b, `,"retry_after":`...)
		b = strconv.AppendInt(b, int64(c.retryAfter), 10)
	}
	return append(b, "}\n"...)
}

// genQueue holds the calls that started and have not ended, by end.
type genQueue []genCall

func (q genQueue) Len() int           { return len(q) }
func (q genQueue) Less(i, j int) bool { return q[i].end.Before(q[j].end) }
func (q genQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *genQueue) Push(x any)        { *q = append(*q, x.(genCall)) }
func (q *genQueue) Pop() any {
	old := *q
	c := old[len(old)-1]
	*q = old[:len(old)-1]
	return c
}
