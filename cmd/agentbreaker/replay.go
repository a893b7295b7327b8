package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// replay runs the replay command: recorded calls through a breaker with the policy
// given, per dependency, as text or JSON on stdout.
func replay(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dep := fs.String("dependency", "", "dependency to replay (default: every dependency in the records)")
	depsFile := fs.String("deps", "", "dependency file whose policy for each dependency to replay (default: the policy the plugin gives a tool by default)")
	sweep := fs.Bool("sweep", false, "also try a grid of thresholds and recommend one")
	jsonOut := fs.Bool("json", false, "print JSON instead of text")
	var fp depfile.Policy
	addPolicyFlags(fs, &fp)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: agentbreaker replay [flags] RECORDS\n\nRuns recorded calls (agentbreaker's slog JSON records, or a CSV of\ntimestamp,dependency,outcome,latency_ms; \"-\" reads standard input) through a\nbreaker with your policy: when it would have tripped, how many calls it would\nhave sent during each outage, how often it would have tripped on a healthy\ndependency. Outages are found in the records: 10 s bins with at least 3 calls,\nhalf or more of them failing.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("want one records file (\"-\" for standard input), got %d arguments", fs.NArg())
	}
	name := fs.Arg(0)
	rs, err := readRecordsFile(name)
	if err != nil {
		return err
	}
	deps, err := replayedDependencies(name, rs, *dep)
	if err != nil {
		return err
	}
	m, toolDefault, err := replayMap(*depsFile, deps, stderr)
	if err != nil {
		return err
	}
	reports, err := replayEach(rs, deps, m, toolDefault, fp, *sweep)
	if err != nil {
		return err
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

// addPolicyFlags defines replay's policy flags on fs, each setting its field of fp.
func addPolicyFlags(fs *flag.FlagSet, fp *depfile.Policy) {
	fs.Func("failure-rate-threshold", "policy: failure rate that trips, in (0, 1]", func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errors.New("not a number")
		}
		fp.FailureRateThreshold = f
		return nil
	})
	fs.Func("minimum-calls", "policy: volume gate, in calls", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("not a whole number")
		}
		fp.MinimumCalls = n
		return nil
	})
	fs.Func("window", "policy: rolling window, e.g. 30s", func(v string) error { fp.Window = v; return nil })
	fs.Func("cooldown", "policy: open period, e.g. 30s", func(v string) error { fp.Cooldown = v; return nil })
}

// readRecordsFile reads the call records in the file name ("-" for standard input);
// an error names the file, and the line and column of a bad record.
func readRecordsFile(name string) ([]sim.Record, error) {
	in := io.Reader(os.Stdin)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	rs, err := sim.ReadRecords(in)
	if re, ok := errors.AsType[*sim.RecordError](err); ok {
		if re.Column > 0 {
			return nil, fmt.Errorf("%s:%d:%d: %s", name, re.Line, re.Column, re.Problem)
		}
		return nil, fmt.Errorf("%s:%d: %s", name, re.Line, re.Problem)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return rs, nil
}

// replayedDependencies returns the dependencies to replay: dep when it is not "", or
// every dependency in records rs, read from the file name.
func replayedDependencies(name string, rs []sim.Record, dep string) ([]string, error) {
	deps := sim.Dependencies(rs)
	if len(deps) == 0 {
		return nil, fmt.Errorf("%s: no call records (want agentbreaker's slog JSON records of calls, or a CSV of timestamp,dependency,outcome,latency_ms)", name)
	}
	if dep != "" {
		if !slices.Contains(deps, dep) {
			return nil, fmt.Errorf("%s: no records of dependency %q; the records have %s", name, dep, strings.Join(deps, ", "))
		}
		deps = []string{dep}
	}
	return deps, nil
}

// replayMap returns the dependency map of depsFile (nil for "") and the policy a tool
// gets by default, the file's default over the plugin's. It warns on stderr about each
// of deps that the file does not list.
func replayMap(depsFile string, deps []string, stderr io.Writer) (*dependencymap.Map, breaker.Policy, error) {
	var m *dependencymap.Map
	// What a plugin user's tools get when nothing says otherwise (the cooldown doubles
	// after each failed probe), not the bare breaker's defaults.
	toolDefault := dependencymap.DefaultToolPolicy
	if depsFile == "" {
		return m, toolDefault, nil
	}
	d, err := depfile.Read(depsFile)
	if err != nil {
		return nil, toolDefault, err
	}
	cfg, err := d.Config()
	if err != nil {
		return nil, toolDefault, err // every problem, with its line: printError lists them
	}
	if m, err = dependencymap.New(cfg); err != nil {
		return nil, toolDefault, err
	}
	toolDefault = dependencymap.MergePolicy(toolDefault, cfg.Default)
	for _, k := range deps {
		if _, listed := d.File.Dependencies[k]; !listed {
			fmt.Fprintf(stderr, "agentbreaker replay: warning: %s lists no dependency %q: its records are replayed with the file's default policy\n", depsFile, k)
		}
	}
	return m, toolDefault, nil
}

// replayReport is one dependency's replay, and with -sweep the grid and its rule.
type replayReport struct {
	Replay *sim.ReplayResult   `json:"replay"`
	Sweep  []*sim.ReplayResult `json:"sweep,omitempty"`
	Rule   string              `json:"recommendation_rule,omitempty"`
}

// replayEach replays records rs for each of deps under its policy (see replayPolicy)
// and, with sweep, tries the default grid too.
func replayEach(rs []sim.Record, deps []string, m *dependencymap.Map, toolDefault breaker.Policy, fp depfile.Policy, sweep bool) ([]replayReport, error) {
	var reports []replayReport
	for _, d := range deps {
		p, err := replayPolicy(m, toolDefault, d, fp)
		if err != nil {
			return nil, err
		}
		outages := sim.DetectOutages(filterDep(rs, d))
		res, err := sim.Replay(rs, d, p, outages)
		if err != nil {
			return nil, err
		}
		rep := replayReport{Replay: res}
		if sweep {
			if rep.Sweep, err = sim.Sweep(rs, d, p, sim.DefaultSweepGrid); err != nil {
				return nil, err
			}
			rep.Rule = sim.RecommendationRule
		}
		reports = append(reports, rep)
	}
	return reports, nil
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

// replayPolicy is the dependency's policy from the file (or, for a dependency it does
// not list, the file's default over the plugin's tool defaults), with the flags'
// fields over it.
func replayPolicy(m *dependencymap.Map, toolDefault breaker.Policy, dep string, over depfile.Policy) (breaker.Policy, error) {
	base := toolDefault
	if m != nil {
		if b, ok := m.Get(dep); ok {
			base = b.Policy()
		}
	}
	cfg, err := depfile.File{Default: over}.Config()
	if err != nil {
		return breaker.Policy{}, flagError(err)
	}
	base = dependencymap.MergePolicy(base, cfg.Default)
	p := base.WithDefaults()
	var msgs []string
	for _, ce := range p.Problems() {
		key := sim.FileKey(strings.TrimPrefix(ce.Field, "Policy."))
		msgs = append(msgs, fmt.Sprintf("the policy for %s: %s = %v: %s", dep, key, ce.Value, strings.ReplaceAll(ce.Problem, "Cooldown (", "cooldown (")))
	}
	if len(msgs) > 0 {
		return breaker.Policy{}, errors.New(strings.Join(msgs, "; "))
	}
	return p, nil
}

// describe is the policy in the words simulate's header uses (sim.DescribePolicy), so
// the two commands describe a window the same way.
func describe(p sim.PolicyInfo) string { return p.Description }

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

// flagError names the flag of each problem with the policy flags (-window, ...): their
// values are checked as a file's default policy would be.
func flagError(err error) error {
	fe, ok := errors.AsType[*depfile.Error](err)
	if !ok {
		return err
	}
	var msgs []string
	for _, p := range fe.Problems {
		p.Line, p.Column = 0, 0
		if key, ok := strings.CutPrefix(p.Path, "default."); ok {
			p.Path = "-" + strings.ReplaceAll(key, "_", "-")
		}
		msgs = append(msgs, p.String())
	}
	return errors.New(strings.Join(msgs, "; "))
}
