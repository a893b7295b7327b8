package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/sim"
	simplot "github.com/agentbreaker/agentbreaker/sim/plot"
)

// scenarioFlag is one flag that sets a scenario field; its name is the field's YAML
// key with hyphens.
type scenarioFlag struct {
	key   string // YAML key
	usage string
	set   func(s *sim.Scenario, v string) error
}

func durationFlag(key, usage string, dst func(*sim.Scenario) *time.Duration) scenarioFlag {
	return scenarioFlag{key, usage, func(s *sim.Scenario, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("not a duration (want e.g. 30s, 5m)")
		}
		if d <= 0 && key != "outage_start" {
			return fmt.Errorf("must be more than zero")
		}
		if d == 0 {
			d = time.Nanosecond // outage from the first instant (0 would mean "default")
		}
		*dst(s) = d
		return nil
	}}
}

func intFlag(key, usage string, dst func(*sim.Scenario) *int) scenarioFlag {
	return scenarioFlag{key, usage, func(s *sim.Scenario, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not a whole number")
		}
		if n <= 0 {
			return fmt.Errorf("must be at least 1")
		}
		*dst(s) = n
		return nil
	}}
}

func rateFlag(key, usage string, dst func(*sim.Scenario) *float64) scenarioFlag {
	return scenarioFlag{key, usage, func(s *sim.Scenario, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		if f == 0 {
			f = math.SmallestNonzeroFloat64 // an explicit zero; see sim.Scenario
		}
		*dst(s) = f
		return nil
	}}
}

func policyFlag(key, usage string, set func(p *depfile.Policy, v string) error) scenarioFlag {
	return scenarioFlag{key, usage, func(s *sim.Scenario, v string) error { return set(&s.Policy, v) }}
}

var scenarioFlags = []scenarioFlag{
	{"seed", "seed of every random choice (default 1)", func(s *sim.Scenario, v string) error {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			return fmt.Errorf("want a whole number from 1")
		}
		s.Seed = n
		return nil
	}},
	durationFlag("duration", "virtual time simulated (default 14m)", func(s *sim.Scenario) *time.Duration { return &s.Duration }),
	intFlag("users", "users conversing at once (default 30)", func(s *sim.Scenario) *int { return &s.Users }),
	rateFlag("turn_rate", "turns per second from all users (default 1)", func(s *sim.Scenario) *float64 { return &s.TurnRate }),
	{"dependency", "name of the failing dependency (default enrichment)", func(s *sim.Scenario, v string) error { s.Dependency = v; return nil }},
	durationFlag("latency", "healthy median latency (default 200ms)", func(s *sim.Scenario) *time.Duration { return &s.Latency }),
	rateFlag("error_rate", "share of calls failing while healthy (default 0.01)", func(s *sim.Scenario) *float64 { return &s.ErrorRate }),
	durationFlag("outage_start", "outage start from the run's start (default 2m)", func(s *sim.Scenario) *time.Duration { return &s.OutageStart }),
	durationFlag("outage_end", "outage end from the run's start (default 11m)", func(s *sim.Scenario) *time.Duration { return &s.OutageEnd }),
	rateFlag("outage_error_rate", "share of calls failing during the outage (default 1)", func(s *sim.Scenario) *float64 { return &s.OutageErrorRate }),
	{"outage_mode", `"hang" (until the tool timeout) or "error" (fast reset) (default hang)`, func(s *sim.Scenario, v string) error { s.OutageMode = v; return nil }},
	durationFlag("error_latency", "how long a failing call takes in error mode (default 100ms)", func(s *sim.Scenario) *time.Duration { return &s.ErrorLatency }),
	durationFlag("model_latency", "one model step (default 1s)", func(s *sim.Scenario) *time.Duration { return &s.ModelLatency }),
	intFlag("sub_agents", "sub-agents calling the tool per model step (default 2)", func(s *sim.Scenario) *int { return &s.SubAgents }),
	intFlag("client_attempts", "the tool client's own attempts, naive and consecutive (default 3)", func(s *sim.Scenario) *int { return &s.ClientAttempts }),
	durationFlag("client_backoff", "the client's first backoff ceiling (default 100ms)", func(s *sim.Scenario) *time.Duration { return &s.ClientBackoff }),
	{"reissues", "times the model calls a failed tool again per turn (default 2)", func(s *sim.Scenario, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not a whole number")
		}
		if n == 0 {
			n = -1 // explicit zero; see sim.Scenario.Reissues
		}
		if n < -1 {
			return fmt.Errorf("must be at least 0")
		}
		s.Reissues = n
		return nil
	}},
	rateFlag("reissue_after_error", "chance the model calls again after a raw error (default 1)", func(s *sim.Scenario) *float64 { return &s.ReissueAfterError }),
	rateFlag("reissue_after_unavailable", "chance it calls again after an unavailable payload (default 0.3)", func(s *sim.Scenario) *float64 { return &s.ReissueAfterUnavailable }),
	durationFlag("tool_timeout", "per-call tool timeout (default 5s)", func(s *sim.Scenario) *time.Duration { return &s.ToolTimeout }),
	durationFlag("turn_timeout", "whole-turn budget (default 30s)", func(s *sim.Scenario) *time.Duration { return &s.TurnTimeout }),
	intFlag("bulkhead", "concurrent calls allowed to the dependency, agentbreaker strategies (default 20)", func(s *sim.Scenario) *int { return &s.Bulkhead }),
	policyFlag("failure_rate_threshold", "your policy: failure rate that trips (default 0.5)", func(p *depfile.Policy, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		p.FailureRateThreshold = f
		return nil
	}),
	policyFlag("minimum_calls", "your policy: volume gate (default 20)", func(p *depfile.Policy, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not a whole number")
		}
		p.MinimumCalls = n
		return nil
	}),
	policyFlag("window", "your policy: rolling window (default 20s)", func(p *depfile.Policy, v string) error { p.Window = v; return nil }),
	policyFlag("cooldown", "your policy: open period before a probe (default 30s)", func(p *depfile.Policy, v string) error { p.Cooldown = v; return nil }),
	policyFlag("cooldown_multiplier", "your policy: cooldown growth per failed probe (default 1)", func(p *depfile.Policy, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		p.CooldownMultiplier = f
		return nil
	}),
	policyFlag("half_open_probes", "your policy: probes that must succeed to close (default 1)", func(p *depfile.Policy, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not a whole number")
		}
		p.HalfOpenProbes = n
		return nil
	}),
	{"strategies", "comma-separated strategies (default " + strings.Join(sim.Strategies(), ",") + ")", func(s *sim.Scenario, v string) error {
		s.Strategies = strings.Split(v, ",")
		return nil
	}},
}

func flagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

func simulate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "scenario YAML file; flags override its values")
	depsFile := fs.String("deps", "", "dependency file (YAML or JSON) whose policy for -dependency is your policy")
	out := fs.String("out", "", "directory to write summary.json, incident.png and incident.svg to")
	jsonOut := fs.String("json", "", `file for the JSON summary ("-" for standard output)`)
	pngOut := fs.String("png", "", "file for the PNG plot")
	svgOut := fs.String("svg", "", "file for the SVG plot")
	quiet := fs.Bool("quiet", false, "do not print the timeline")
	partial := fs.String("partial", "", "comma-separated shares failing (e.g. 0.3,0.6,0.9): run partial outages instead and print their tables (see docs/partial-outages.md)")
	var pending []func(*sim.Scenario) error
	for _, f := range scenarioFlags {
		f := f
		fs.Func(flagName(f.key), f.usage, func(v string) error {
			// Check the value now, so the flag package names the flag and the value.
			var probe sim.Scenario
			if err := f.set(&probe, v); err != nil {
				return err
			}
			pending = append(pending, func(s *sim.Scenario) error { return f.set(s, v) })
			return nil
		})
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: agentbreaker simulate [flags]\n\nReplays an outage in virtual time through agentbreaker's real breaker, callbacks,\nbulkhead and retry budget, next to the strategies it replaces. With no flags it is the\ndesign document's incident. Scenario YAML keys are the flag names with underscores.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))
	}
	var s sim.Scenario
	if *config != "" {
		var err error
		if s, err = sim.LoadScenario(*config); err != nil {
			return explain(err)
		}
	}
	for _, apply := range pending {
		if err := apply(&s); err != nil {
			return err
		}
	}
	if *depsFile != "" {
		fp, err := policyFromDeps(*depsFile, s.WithDefaults().Dependency)
		if err != nil {
			return err
		}
		s.Policy = fp
	}
	if *partial != "" {
		return simulatePartial(s, *partial, stdout)
	}
	if err := s.WithDefaults().Validate(); err != nil {
		return explain(err)
	}
	start := time.Now()
	bar := newProgress(stderr)
	res, err := sim.Run(s, sim.Options{Progress: func(done float64) { bar.update(done, time.Since(start)) }})
	bar.done()
	if err != nil {
		return explain(err)
	}
	if !*quiet {
		if err := res.WriteTimeline(stdout); err != nil {
			return err
		}
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		def := func(p *string, name string) {
			if *p == "" {
				*p = filepath.Join(*out, name)
			}
		}
		def(jsonOut, "summary.json")
		def(pngOut, "incident.png")
		def(svgOut, "incident.svg")
	}
	if *jsonOut != "" {
		if err := writeTo(*jsonOut, stdout, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(res.Summaries())
		}); err != nil {
			return err
		}
	}
	for _, o := range []struct {
		path string
		f    simplot.Format
	}{{*pngOut, simplot.PNG}, {*svgOut, simplot.SVG}} {
		if o.path == "" {
			continue
		}
		if err := writeTo(o.path, stdout, func(w io.Writer) error { return simplot.Write(w, res, o.f) }); err != nil {
			return err
		}
	}
	for _, p := range []string{*jsonOut, *pngOut, *svgOut} {
		if p != "" && p != "-" && !*quiet {
			fmt.Fprintf(stdout, "wrote %s\n", p)
		}
	}
	return nil
}

// explain adds the flag name to a scenario error, which names the YAML key.
func explain(err error) error {
	var ce *sim.ConfigError
	if errors.As(err, &ce) {
		key := ce.Field
		if i := strings.IndexAny(key, "[."); i >= 0 {
			key = key[:i]
		}
		return fmt.Errorf("%w (flag -%s)", err, flagName(key))
	}
	return err
}

func writeTo(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// policyFromDeps returns the policy a dependency file gives dep (its own overrides over
// the file's default), in the file's form.
func policyFromDeps(path, dep string) (depfile.Policy, error) {
	cfg, err := depfile.Load(path)
	if err != nil {
		return depfile.Policy{}, err
	}
	m, err := dependencymap.New(cfg)
	if err != nil {
		return depfile.Policy{}, err
	}
	b, ok := m.Get(dep)
	if !ok {
		return depfile.Policy{}, fmt.Errorf("%s: no dependency %q (set -dependency to one of its keys)", path, dep)
	}
	p := b.Policy()
	dur := func(d time.Duration) string { return d.String() }
	fp := depfile.Policy{
		FailureRateThreshold: p.FailureRateThreshold, MinimumCalls: p.MinimumCalls, Window: dur(p.Window),
		Buckets: p.Buckets, SlowCallRateThreshold: p.SlowCallRateThreshold, Cooldown: dur(p.Cooldown),
		CooldownMultiplier: p.CooldownMultiplier, MaxCooldown: dur(p.MaxCooldown), Jitter: p.Jitter,
		HalfOpenProbes: p.HalfOpenProbes, ProbeLease: dur(p.ProbeLease), MaxRetryAfter: dur(p.MaxRetryAfter),
		Version: p.Version,
	}
	if p.SlowCallThreshold > 0 {
		fp.SlowCallThreshold = dur(p.SlowCallThreshold)
	}
	return fp, nil
}
