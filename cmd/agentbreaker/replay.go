package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/sim"
)

func replay(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dep := fs.String("dependency", "", "dependency to replay (default: every dependency in the records)")
	depsFile := fs.String("deps", "", "dependency file whose policy for each dependency to replay (default: agentbreaker's defaults)")
	sweep := fs.Bool("sweep", false, "also try a grid of thresholds and recommend one")
	jsonOut := fs.Bool("json", false, "print JSON instead of text")
	var fp depfile.Policy
	fs.Func("failure-rate-threshold", "policy: failure rate that trips", func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		fp.FailureRateThreshold = f
		return err
	})
	fs.Func("minimum-calls", "policy: volume gate", func(v string) error {
		n, err := strconv.Atoi(v)
		fp.MinimumCalls = n
		return err
	})
	fs.Func("window", "policy: rolling window, e.g. 30s", func(v string) error { fp.Window = v; return nil })
	fs.Func("cooldown", "policy: open period, e.g. 30s", func(v string) error { fp.Cooldown = v; return nil })
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: agentbreaker replay [flags] RECORDS\n\nRuns recorded calls (agentbreaker's slog JSON records, or a CSV of\ntimestamp,dependency,outcome,latency_ms; \"-\" reads standard input) through a\nbreaker with your policy: when it would have tripped, how many calls it would\nhave sent during each outage, how often it would have tripped on a healthy\ndependency. Outages are found in the records: 10 s bins with at least 3 calls,\nhalf or more of them failing.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("%w: want one records file", errUsage)
	}
	in := io.Reader(os.Stdin)
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	rs, err := sim.ReadRecords(in)
	if err != nil {
		return err
	}
	deps := sim.Dependencies(rs)
	if *dep != "" {
		deps = []string{*dep}
	}
	if len(deps) == 0 {
		return fmt.Errorf("%s: no call records", fs.Arg(0))
	}
	var m *dependencymap.Map
	if *depsFile != "" {
		cfg, err := depfile.Load(*depsFile)
		if err != nil {
			return err
		}
		if m, err = dependencymap.New(cfg); err != nil {
			return err
		}
	}
	type report struct {
		Replay *sim.ReplayResult   `json:"replay"`
		Sweep  []*sim.ReplayResult `json:"sweep,omitempty"`
		Rule   string              `json:"recommendation_rule,omitempty"`
	}
	var reports []report
	for _, d := range deps {
		p, err := replayPolicy(m, d, fp)
		if err != nil {
			return err
		}
		outages := sim.DetectOutages(filterDep(rs, d))
		res, err := sim.Replay(rs, d, p, outages)
		if err != nil {
			return err
		}
		rep := report{Replay: res}
		if *sweep {
			if rep.Sweep, err = sim.Sweep(rs, d, p, sim.DefaultSweepGrid); err != nil {
				return err
			}
			rep.Rule = sim.RecommendationRule
		}
		reports = append(reports, rep)
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(reports)
	}
	for i, rep := range reports {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		writeReplay(stdout, rep.Replay)
		if rep.Sweep != nil {
			writeSweep(stdout, rep.Sweep)
		}
	}
	return nil
}

func filterDep(rs []sim.Record, dep string) []sim.Record {
	var out []sim.Record
	for _, r := range rs {
		if r.Dependency == dep {
			out = append(out, r)
		}
	}
	return out
}

// replayPolicy is the dependency's policy from the file (or the breaker's defaults),
// with the flags' fields over it.
func replayPolicy(m *dependencymap.Map, dep string, over depfile.Policy) (breaker.Policy, error) {
	base := breaker.Policy{}
	if m != nil {
		if b, ok := m.Get(dep); ok {
			base = b.Policy()
		}
	}
	cfg, err := depfile.File{Default: over}.Config()
	if err != nil {
		return breaker.Policy{}, fmt.Errorf("policy: %w", err)
	}
	base = dependencymap.MergePolicy(base, cfg.Default)
	p := base.WithDefaults()
	if err := p.Validate(); err != nil {
		return breaker.Policy{}, fmt.Errorf("policy: %w", err)
	}
	return p, nil
}

func describe(p sim.PolicyInfo) string {
	return fmt.Sprintf("%.0f%% over ≥%d calls in %s, cooldown %s", p.FailureRateThreshold*100, p.MinimumCalls, p.Window, p.Cooldown)
}

func writeReplay(w io.Writer, r *sim.ReplayResult) {
	fmt.Fprintf(w, "%s: %d calls; ", r.Dependency, r.Calls)
	switch len(r.Outages) {
	case 0:
		fmt.Fprintln(w, "no outage in the records")
	default:
		var spans []string
		for _, o := range r.Outages {
			spans = append(spans, o.Start.Format("2006-01-02 15:04:05")+"–"+o.End.Format("15:04:05"))
		}
		fmt.Fprintf(w, "%d outage(s): %s\n", len(r.Outages), strings.Join(spans, ", "))
	}
	if r.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", r.Warning)
	}
	fmt.Fprintf(w, "with the policy %s, the breaker would have\n", describe(r.Policy))
	for i, o := range r.Outages {
		if a := r.TripAfterOnset[i]; a != nil {
			at := o.Start.Add(time.Duration(*a * float64(time.Second)))
			fmt.Fprintf(w, "  tripped at %s, %.1f s after the outage from %s began\n", at.Format("15:04:05"), *a, o.Start.Format("15:04:05"))
		} else {
			fmt.Fprintf(w, "  not tripped in the outage from %s\n", o.Start.Format("15:04:05"))
		}
	}
	if len(r.Outages) > 0 {
		fmt.Fprintf(w, "  sent %d calls during the outage(s), and answered %d at once\n", r.OutageCallsSent, r.OutageCallsSaved)
	}
	fmt.Fprintf(w, "  tripped falsely %d times in healthy periods (%d healthy calls refused)\n", r.FalseTrips, r.HealthyRejected)
}

func writeSweep(w io.Writer, rs []*sim.ReplayResult) {
	fmt.Fprintf(w, "\nsweep of %d policies, best first (rule: %s):\n", len(rs), sim.RecommendationRule)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rate\tmin calls\twindow\toutage calls sent\tsaved\tfalse trips\thealthy refused\t")
	const shown = 12
	for _, r := range rs[:min(shown, len(rs))] {
		fmt.Fprintf(tw, "%.0f%%\t%d\t%s\t%d\t%d\t%d\t%d\t\n", r.Policy.FailureRateThreshold*100, r.Policy.MinimumCalls, r.Policy.Window,
			r.OutageCallsSent, r.OutageCallsSaved, r.FalseTrips, r.HealthyRejected)
	}
	tw.Flush()
	if len(rs) > shown {
		fmt.Fprintf(w, "  (%d more with -json)\n", len(rs)-shown)
	}
	best := rs[0]
	fmt.Fprintf(w, "recommended: failure_rate_threshold %g, minimum_calls %d, window %s (%d outage calls sent, %d false trips)\n",
		best.Policy.FailureRateThreshold, best.Policy.MinimumCalls, best.Policy.Window, best.OutageCallsSent, best.FalseTrips)
}
