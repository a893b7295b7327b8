package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/internal/sim"
	"github.com/agentbreaker/agentbreaker/internal/sim/plot"
)

// tune runs the tune command: a policy per dependency from recorded calls, a plot of
// the trade-off, and a dependency file that lint passes.
func tune(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write the recommended dependency file (YAML) here (\"-\": standard output)")
	png := fs.String("png", "", "write the trade-off plot (PNG) here")
	timeouts := fs.String("timeouts", "", "write the recommended tool timeouts here, as lint -timeouts reads them")
	jsonOut := fs.Bool("json", false, "print JSON instead of text")
	top := fs.Int("top", 5, "candidates to list per dependency, best first")
	workers := fs.Int("workers", 0, "goroutines that replay the candidates (default: GOMAXPROCS)")
	month := fs.String("month", "", "instead of RECORDS, tune the month that generate -seed SEED writes (in a temporary file)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: agentbreaker tune [flags] RECORDS\n\nReads recorded calls (the plugin's JSON log, or a CSV of\ntimestamp,dependency,outcome,latency_ms) twice, streaming, and replays %d\ncandidate policies and the plugin's default through real breakers. Recommends,\nper dependency with at least %d outages, the candidate that holds when each\noutage is left out in turn, with a tool timeout and adaptive-limit bounds from\nthe healthy calls. Never recommends what lint warns about.\n\n",
			len(sim.DefaultTuneGrid.Policies(breaker.Policy{})), sim.MinOutages)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *top < 0 {
		return usageErrorf("-top %d: want 0 or more", *top)
	}
	if *workers < 0 {
		return usageErrorf("-workers %d: want 0 (GOMAXPROCS) or more", *workers)
	}
	name, err := tuneInput(fs, *month)
	if err != nil {
		return err
	}
	if *month != "" {
		defer os.RemoveAll(filepath.Dir(name))
	}
	var res *sim.TuneResult
	res, err = sim.Tune(func() (io.ReadCloser, error) { return os.Open(name) },
		sim.TuneConfig{Base: dependencymap.DefaultToolPolicy, Allowed: lintPolicy(), Workers: *workers})
	if err != nil {
		return recordsError(name, err)
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		writeTune(stdout, res, *top)
	}
	records := filepath.Base(name)
	if *month != "" {
		records = "generate -seed " + *month
	}
	if err := tuneOutputs(res, records, *out, *png, stdout, *jsonOut); err != nil || *timeouts == "" {
		return err
	}
	return writeTo(*timeouts, stdout, func(w io.Writer) error { _, err := io.WriteString(w, tunedTimeouts(res, records)); return err })
}

// tuneInput returns the records file to tune: the argument, or with -month a month of
// generated calls in a temporary directory (the caller removes it).
func tuneInput(fs *flag.FlagSet, month string) (string, error) {
	switch {
	case month == "" && (fs.NArg() != 1 || fs.Arg(0) == "-"):
		return "", usageErrorf("want one records file (tune reads it twice: not standard input), got %q", fs.Args())
	case month == "":
		return fs.Arg(0), nil
	case fs.NArg() > 0:
		return "", usageErrorf("-month %s: want no records file with it, got %q", month, fs.Args())
	}
	seed, err := strconv.ParseUint(month, 10, 64)
	if err != nil {
		return "", usageErrorf("-month %q: want a seed, a whole number", month)
	}
	dir, err := os.MkdirTemp("", "agentbreaker-month")
	if err != nil {
		return "", err
	}
	name := filepath.Join(dir, "month.jsonl")
	f, err := os.Create(name)
	if err == nil {
		_, err = sim.Generate(f, sim.GenerateConfig{Seed: seed})
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return name, nil
}

// tuneOutputs writes the plot and the dependency file, and checks the file with lint.
func tuneOutputs(res *sim.TuneResult, records, out, png string, stdout io.Writer, quiet bool) error {
	tuned := 0
	for _, dt := range res.Dependencies {
		if dt.Best >= 0 {
			tuned++
		}
	}
	if tuned == 0 {
		if !quiet { // JSON says it already
			fmt.Fprintln(stdout, "no dependency has a recommendation")
		}
		return errProblems
	}
	if png != "" {
		if err := writeTo(png, stdout, func(w io.Writer) error { return plot.WriteTradeoff(w, res, plot.PNG) }); err != nil {
			return err
		}
	}
	if out == "" {
		return nil
	}
	text := tunedFile(res, records)
	if err := lintText(text); err != nil {
		return fmt.Errorf("lint finds %v in the file tune wrote (a bug in tune: please report it)", err)
	}
	if err := writeTo(out, stdout, func(w io.Writer) error { _, err := io.WriteString(w, text); return err }); err != nil {
		return err
	}
	if out != "-" && !quiet {
		fmt.Fprintf(stdout, "wrote %s: lint finds nothing in it\n", out)
	}
	return nil
}

// recordsError names the file, and the line and column of a bad record.
func recordsError(name string, err error) error {
	if re, ok := errors.AsType[*sim.RecordError](err); ok {
		if re.Column > 0 {
			return fmt.Errorf("%s:%d:%d: %s", name, re.Line, re.Column, re.Problem)
		}
		return fmt.Errorf("%s:%d: %s", name, re.Line, re.Problem)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// lintPolicy returns a check that refuses a candidate lint warns about: it writes the
// candidate as a dependency file and runs lint's checks on it, once per policy.
func lintPolicy() func(breaker.Policy) error {
	seen := map[string]error{}
	return func(p breaker.Policy) error {
		text := policyYAML(p, "      ")
		if _, ok := seen[text]; !ok {
			seen[text] = lintText("dependencies:\n  candidate:\n    tools: [t]\n    policy:\n" + text)
		}
		return seen[text]
	}
}

// lintText runs lint's checks on a dependency file's text: an error says what they
// find.
func lintText(text string) error {
	dir, err := os.MkdirTemp("", "agentbreaker-tune")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "deps.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return err
	}
	d, err := depfile.Read(path)
	if err != nil {
		return err
	}
	var found []string
	for _, f := range lintDeps(d, nil) {
		found = append(found, strings.TrimPrefix(f.String(), path+":"))
	}
	if len(found) > 0 {
		return errors.New(strings.Join(found, "; "))
	}
	return nil
}

// policyYAML writes the fields of p that tune chooses, indented.
func policyYAML(p breaker.Policy, indent string) string {
	fp := sim.FilePolicy(p)
	s := fmt.Sprintf("%sfailure_rate_threshold: %v\n%sminimum_calls: %d\n%swindow: %s\n%scooldown: %s\n",
		indent, fp.FailureRateThreshold, indent, fp.MinimumCalls, indent, fp.Window, indent, fp.Cooldown)
	if fp.MaxCooldown != "" {
		s += fmt.Sprintf("%scooldown_multiplier: %v\n%smax_cooldown: %s\n", indent, fp.CooldownMultiplier, indent, fp.MaxCooldown)
	}
	return s
}

// tunedFile is the dependency file of res's recommendations.
func tunedFile(res *sim.TuneResult, records string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by agentbreaker tune from %s (%d records). Rules:\n# - policy: %s.\n# - %s.\n# - adaptive: %s.\n",
		records, res.Records, sim.TuneRule, sim.TimeoutRule, sim.LimitRule)
	b.WriteString("policy_version: tune\ndependencies:\n")
	for _, dt := range res.Dependencies {
		if dt.Best < 0 {
			fmt.Fprintf(&b, "  # %s: no recommendation: %s\n", dt.Dependency, dt.NoRecommendation)
			continue
		}
		c, s := dt.Candidates[dt.Best], dt.Sizing
		tools := dt.Tools
		if len(tools) == 0 {
			tools = []string{dt.Dependency}
			fmt.Fprintf(&b, "  # The records name no tools: list the tools that call %s.\n", dt.Dependency)
		}
		fmt.Fprintf(&b, "  %s:\n    # tool timeout: %v (p99.5 of healthy calls %v)\n    tools: [%s]\n    policy:\n%s      probe_lease: %s\n",
			dt.Dependency, s.Timeout, s.P995.Round(time.Millisecond), strings.Join(tools, ", "),
			policyYAML(sim.PolicyOf(c), "      "), (max(time.Second, roundUpSecond(s.Timeout))).String())
		fmt.Fprintf(&b, "    adaptive:\n      min_limit: %d\n      max_limit: %d\n", s.MinLimit, s.MaxLimit)
	}
	return b.String()
}

// tunedTimeouts is the timeouts file of res's recommendations: each tool's timeout,
// one attempt.
func tunedTimeouts(res *sim.TuneResult, records string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by agentbreaker tune from %s: %s.\ntools:\n", records, sim.TimeoutRule)
	for _, dt := range res.Dependencies {
		for _, tool := range dt.Tools {
			if dt.Best >= 0 {
				fmt.Fprintf(&b, "  %s: {timeout: %v, attempts: 1}\n", tool, dt.Sizing.Timeout)
			}
		}
	}
	return b.String()
}

func roundUpSecond(d time.Duration) time.Duration { return (d + time.Second - 1).Truncate(time.Second) }

// writeTune prints each dependency's folds, the recommendation and the best
// candidates' trade-off.
func writeTune(w io.Writer, res *sim.TuneResult, top int) {
	fmt.Fprintf(w, "%d records; rule: %s\n", res.Records, sim.TuneRule)
	for _, dt := range res.Dependencies {
		fmt.Fprintf(w, "\n%s: %d calls, %d outage(s)\n", dt.Dependency, dt.Calls, len(dt.Outages))
		if dt.Best < 0 {
			fmt.Fprintf(w, "  no recommendation: %s\n", dt.NoRecommendation)
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  held-out outage\tchosen on the others\tdead calls sent\tbase\thealthy refused\tbase\tfalse trips\tbase\t")
		for _, f := range dt.Folds {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", f.Outage.Start.Format("Jan 2 15:04"), dt.Candidates[f.Chosen].Label(),
				f.Held.DeadSent, f.Base.DeadSent, f.Held.HealthyRefused, f.Base.HealthyRefused, f.Held.FalseTrips, f.Base.FalseTrips)
		}
		h, b := dt.HeldOut, dt.BaseHeldOut
		fmt.Fprintf(tw, "  all folds\t\t%d\t%d\t%d\t%d\t%d\t%d\t\n", h.DeadSent, b.DeadSent, h.HealthyRefused, b.HealthyRefused, h.FalseTrips, b.FalseTrips)
		tw.Flush()
		best, s := dt.Candidates[dt.Best], dt.Sizing
		fmt.Fprintf(w, "  recommended (chosen by %d of %d folds): %s\n  base policy: %s\n", dt.Votes, len(dt.Folds), best.Policy.Description, dt.Base.Policy.Description)
		fmt.Fprintf(w, "  tool timeout %v (p50 %v, p99 %v, p99.5 %v); adaptive limit %d–%d (mean %.2f/s, peak %.1f/s)\n",
			s.Timeout, s.P50.Round(time.Millisecond), s.P99.Round(time.Millisecond), s.P995.Round(time.Millisecond), s.MinLimit, s.MaxLimit, s.MeanRate, s.PeakRate)
		writeTradeoff(w, dt, top)
	}
}

// writeTradeoff lists the top candidates over every segment, and the base policy.
func writeTradeoff(w io.Writer, dt sim.DependencyTune, top int) {
	ranked := sim.Ranked(&dt)
	fmt.Fprintf(w, "  trade-off over all %d outages, best %d of %d candidates:\n", len(dt.Outages), min(top, len(ranked)), len(ranked))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  candidate\tdead calls sent\thealthy refused\tfalse trips\t")
	for _, c := range append(ranked[:min(top, len(ranked))], dt.Base) {
		label := c.Label()
		if c == dt.Base {
			label = "base: " + label
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t\n", label, c.Total.DeadSent, c.Total.HealthyRefused, c.Total.FalseTrips)
	}
	tw.Flush()
}
