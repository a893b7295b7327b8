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
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/internal/sim"
	simplot "github.com/agentbreaker/agentbreaker/internal/sim/plot"
	yaml "go.yaml.in/yaml/v3"
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

// policyUsage is the help of each key of the scenario's policy, one flag each. The
// flag's value is read as the file's value would be (yaml), so -window-calls takes
// "off" as the file does.
var policyUsage = []struct{ key, usage string }{
	{"failure_rate_threshold", "your policy: share of failed calls that trips it, above 0 and at most 1 (default 0.5)"},
	{"minimum_calls", "your policy: fewest calls in the window it trips on (default 20)"},
	{"window_calls", "your policy: a count window of the last N calls, or off for a time window (default 20)"},
	{"window", "your policy: a time window of the last D; without -window-calls it makes the window a time window (default: the count window)"},
	{"buckets", "your policy: slices of the time window, which slides one slice at a time (default 10, with a time window)"},
	{"slow_call_threshold", "your policy: a call at least this slow counts as slow, or off (default off)"},
	{"slow_call_rate_threshold", "your policy: share of slow calls that trips it (default 0.5, with -slow-call-threshold)"},
	{"cooldown", "your policy: how long it stays open before a probe (default 30s)"},
	{"cooldown_multiplier", "your policy: cooldown growth per failed probe, 1 for a fixed cooldown (default 1)"},
	{"max_cooldown", "your policy: cap of the grown cooldown (default the larger of -cooldown and 5m, with -cooldown-multiplier above 1)"},
	{"jitter", "your policy: each cooldown stretched by up to this share, negative for none (default 0.1)"},
	{"half_open_probes", "your policy: probes that must all succeed to close it (default 1)"},
	{"probe_lease", "your policy: how long a probe may take before another may go (default 30s)"},
	{"max_retry_after", "your policy: cap on a delay the dependency states (default 15m, with -retry-after)"},
	{"version", "your policy: a name carried in its events (default none)"},
}

// policyFlag sets one key of the scenario's policy, decoding the value as the file would.
func policyFlag(key, usage string) scenarioFlag {
	return scenarioFlag{key, usage, func(s *sim.Scenario, v string) error {
		field, ok := policyField(&s.Policy, key)
		if !ok {
			return fmt.Errorf("no policy key %s", key)
		}
		if err := yaml.Unmarshal([]byte(v), field.Addr().Interface()); err != nil {
			return fmt.Errorf("want %s", kindOf(field))
		}
		if field.IsZero() && v != "0" && strings.TrimSpace(v) != "" && field.Kind() != reflect.String {
			return fmt.Errorf("want %s", kindOf(field))
		}
		return nil
	}}
}

// policyField is the field of p whose file key is key.
func policyField(p *depfile.Policy, key string) (reflect.Value, bool) {
	v := reflect.ValueOf(p).Elem()
	for i := range v.NumField() {
		if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); tag == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

func kindOf(v reflect.Value) string {
	switch {
	case v.Type() == reflect.TypeFor[depfile.IntOrOff]():
		return "a whole number or off"
	case v.Kind() == reflect.Int:
		return "a whole number"
	case v.Kind() == reflect.Float64:
		return "a number"
	default:
		return "a value"
	}
}

func init() {
	for _, p := range policyUsage {
		scenarioFlags = append(scenarioFlags, policyFlag(p.key, p.usage))
	}
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
	durationFlag("duration", "virtual time simulated (default 18m)", func(s *sim.Scenario) *time.Duration { return &s.Duration }),
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
	durationFlag("retry_after", "in error mode, the delay each failing call of the outage states, as a 503 with Retry-After (default none)", func(s *sim.Scenario) *time.Duration { return &s.RetryAfter }),
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
	{"strategies", "comma-separated strategies (default " + strings.Join(sim.Strategies(), ",") + ")", func(s *sim.Scenario, v string) error {
		s.Strategies = strings.Split(v, ",")
		return nil
	}},
}

func flagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// simulate runs the simulate command: an outage replayed in virtual time, its
// timeline or summary on stdout and the files it is asked for.
func simulate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "scenario YAML file; flags override its values")
	depsFile := fs.String("deps", "", "dependency file (YAML or JSON) whose policy for -dependency is your policy")
	var o simOutputs
	fs.StringVar(&o.dir, "out", "", "directory to write summary.json, incident.png and incident.svg to")
	fs.StringVar(&o.json, "json", "", `file for the JSON summary ("-" for standard output)`)
	fs.StringVar(&o.png, "png", "", "file for the PNG plot")
	fs.StringVar(&o.svg, "svg", "", "file for the SVG plot")
	fs.BoolVar(&o.quiet, "quiet", false, "print the summary without the minute-by-minute timeline")
	partial := fs.String("partial", "", "comma-separated shares failing (e.g. 0.3,0.6,0.9): run partial outages instead and print their tables (see docs/partial-outages.md)")
	shape := fs.String("shape", sim.ShapeCapacity, fmt.Sprintf("with -partial, what makes calls fail: %q (a capacity, 503 above it) or %q (the share fails at any load)", sim.ShapeCapacity, sim.ShapeLoadIndependent))
	byPriority := fs.Bool("by-priority", false, "with -partial, run the throttle row alone in both shapes, half the turns low and half normal, and print the share of each priority it shed")
	var sets scenarioSets
	addScenarioFlags(fs, &sets)
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
	s, err := buildScenario(*config, *depsFile, sets)
	if err != nil {
		return err
	}
	if done, err := partialFlags(fs, s, *partial, *shape, *byPriority, stdout); done {
		return err
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
	return o.write(res, stdout)
}

// scenarioSets are the scenario flags given, in order, each as the function that sets
// its value on a scenario.
type scenarioSets []func(*sim.Scenario) error

// apply sets the flags' values on s, in the order they were given.
func (sets scenarioSets) apply(s *sim.Scenario) error {
	for _, set := range sets {
		if err := set(s); err != nil {
			return err
		}
	}
	return nil
}

// addScenarioFlags defines scenarioFlags on fs. Each value given is checked as it is
// parsed, so that the flag package names the flag and the value, and then appended to
// sets.
func addScenarioFlags(fs *flag.FlagSet, sets *scenarioSets) {
	for _, f := range scenarioFlags {
		f := f
		fs.Func(flagName(f.key), f.usage, func(v string) error {
			// Check the value now, so the flag package names the flag and the value.
			var probe sim.Scenario
			if err := f.set(&probe, v); err != nil {
				return err
			}
			*sets = append(*sets, func(s *sim.Scenario) error { return f.set(s, v) })
			return nil
		})
	}
}

// buildScenario returns the scenario to run: the YAML file config's ("" for none) with
// the flags over it; with depsFile, that file's policy for the dependency replaces
// the scenario's, with the policy flags over it again.
func buildScenario(config, depsFile string, sets scenarioSets) (sim.Scenario, error) {
	var s sim.Scenario
	if config != "" {
		var err error
		if s, err = sim.LoadScenario(config); err != nil {
			return s, explain(err)
		}
	}
	if err := sets.apply(&s); err != nil {
		return s, err
	}
	if depsFile != "" {
		// The dependency's policy, with the policy flags over it.
		fp, err := policyFromDeps(depsFile, s.WithDefaults().Dependency, s.RetryAfter > 0)
		if err != nil {
			return s, err
		}
		s.Policy = fp
		if err := sets.apply(&s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// simOutputs are simulate's output flags: files for the JSON summary and the plots
// ("-" for standard output, "" for none), a directory that names the files left
// unset, and whether the text is the summary alone.
type simOutputs struct {
	dir, json, png, svg string
	quiet               bool
}

// write writes res: the text to stdout unless a file goes there (so that one stays
// parseable), then the files, then a line naming each file written.
func (o simOutputs) write(res *sim.Result, stdout io.Writer) error {
	if o.json != "-" && o.png != "-" && o.svg != "-" {
		write := res.WriteTimeline
		if o.quiet {
			write = res.WriteSummary
		}
		if err := write(stdout); err != nil {
			return err
		}
	}
	if o.dir != "" {
		if err := os.MkdirAll(o.dir, 0o755); err != nil {
			return err
		}
		def := func(p *string, name string) {
			if *p == "" {
				*p = filepath.Join(o.dir, name)
			}
		}
		def(&o.json, "summary.json")
		def(&o.png, "incident.png")
		def(&o.svg, "incident.svg")
	}
	if o.json != "" {
		if err := writeTo(o.json, stdout, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(res.Summaries())
		}); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		path string
		f    simplot.Format
	}{{o.png, simplot.PNG}, {o.svg, simplot.SVG}} {
		if f.path == "" {
			continue
		}
		if err := writeTo(f.path, stdout, func(w io.Writer) error { return simplot.Write(w, res, f.f) }); err != nil {
			return err
		}
	}
	for _, p := range []string{o.json, o.png, o.svg} {
		if p != "" && p != "-" {
			fmt.Fprintf(stdout, "wrote %s\n", p)
		}
	}
	return nil
}

// explain adds the flag name to a scenario error, which names the YAML key.
func explain(err error) error {
	var ce *sim.ConfigError
	if errors.As(err, &ce) {
		key := strings.TrimPrefix(ce.Field, "policy.")
		if i := strings.IndexAny(key, "[."); i >= 0 {
			key = key[:i]
		}
		if _, positioned := errors.AsType[*sim.PositionError](err); !positioned {
			// The message without the package that refused it: the user wrote a key.
			return &cliError{msg: fmt.Sprintf("%s = %v: %s (flag -%s)", ce.Field, ce.Value, ce.Problem, flagName(key)), err: err}
		}
		return fmt.Errorf("%w (flag -%s)", err, flagName(key))
	}
	return err
}

// cliError is an error worded for the command line, unwrapping to its cause.
type cliError struct {
	msg string
	err error
}

func (e *cliError) Error() string { return e.msg }
func (e *cliError) Unwrap() error { return e.err }

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
func policyFromDeps(path, dep string, statedDelays bool) (depfile.Policy, error) {
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
	// Only the keys that take effect, with window_calls: off for a time window, so the
	// scenario runs exactly this policy and nothing it ignores.
	fp := sim.FilePolicy(b.Policy())
	if !statedDelays {
		fp.MaxRetryAfter = "" // the simulated dependency states a delay only with -retry-after
	}
	return fp, nil
}
