package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// timeoutsFile describes the layered timeouts of an agent's tools, for lint -timeouts.
type timeoutsFile struct {
	// Turn is the whole-turn budget (tooltimeout.Turn). Optional.
	Turn string `yaml:"turn" json:"turn"`
	// SubAgent is the budget of the sub-agent that calls the tools, when every tool's
	// is the same. Optional; a tool's own sub_agent wins.
	SubAgent string `yaml:"sub_agent" json:"sub_agent"`
	// Tools gives each tool's timeout, attempts and backoff.
	Tools map[string]toolTimeouts `yaml:"tools" json:"tools"`
}

type toolTimeouts struct {
	Timeout  string `yaml:"timeout" json:"timeout"`
	Attempts int    `yaml:"attempts" json:"attempts"`
	Backoff  string `yaml:"backoff" json:"backoff"`
	SubAgent string `yaml:"sub_agent" json:"sub_agent"`
}

// finding is one problem (or, when warn, a warning) with the field and value.
type finding struct {
	file, field string
	value       any
	problem     string
	warn        bool
}

func (f finding) String() string {
	kind := "error"
	if f.warn {
		kind = "warning"
	}
	if f.field == "" { // the problem names its field and value itself
		return fmt.Sprintf("%s: %s: %s", f.file, kind, f.problem)
	}
	return fmt.Sprintf("%s: %s: %s = %v: %s", f.file, kind, f.field, f.value, f.problem)
}

func lint(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeouts := fs.String("timeouts", "", "YAML or JSON file of the tools' layered timeouts (turn, sub_agent, tools: {name: {timeout, attempts, backoff, sub_agent}})")
	strict := fs.Bool("strict", false, "fail on warnings too")
	mutating := fs.String("mutating", "", "comma-separated tools with side effects (callbacks.Config.MutatingTools): warns about a dependency whose tools are all mutating and that has no probe")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: agentbreaker lint [flags] DEPENDENCY-FILE...\n\nChecks dependency files (YAML or JSON, as depfile.Load reads them) and, with\n-timeouts, that each tool's timeout × attempts + backoff fits its sub-agent's budget\nand the turn's, and that probe leases outlast a probe's call. Prints every problem\nwith its field and value; exits 1 when there is one.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return fmt.Errorf("%w: want at least one dependency file", errUsage)
	}
	var tf *timeoutsFile
	var found []finding
	if *timeouts != "" {
		var err error
		if tf, err = readTimeouts(*timeouts); err != nil {
			found = append(found, finding{file: *timeouts, problem: err.Error()})
			tf = nil
		}
	}
	for _, path := range fs.Args() {
		found = append(found, lintDeps(path, tf, *timeouts)...)
		found = append(found, lintMutatingWithoutProbe(path, *mutating)...) // lint_probe.go
	}
	failed := false
	for _, f := range found {
		fmt.Fprintln(stdout, f)
		if !f.warn || *strict {
			failed = true
		}
	}
	if failed {
		return errProblems
	}
	if len(found) == 0 {
		fmt.Fprintf(stdout, "%s: ok\n", strings.Join(fs.Args(), ", "))
	}
	return nil
}

func decodeStrict(path string, data []byte, v any) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		return dec.Decode(v)
	default:
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	}
}

func readTimeouts(path string) (*timeoutsFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tf timeoutsFile
	if err := decodeStrict(path, data, &tf); err != nil {
		return nil, err
	}
	return &tf, nil
}

// lintDeps checks one dependency file: everything depfile.Load checks, reported
// for each dependency rather than only the first, then the layered timeouts of its
// tools and the probe leases.
func lintDeps(path string, tf *timeoutsFile, tfPath string) []finding {
	var out []finding
	add := func(field string, value any, problem string, warn bool) {
		out = append(out, finding{file: path, field: field, value: value, problem: problem, warn: warn})
	}
	data, err := os.ReadFile(path)
	if err != nil {
		add("", nil, err.Error(), false)
		return out
	}
	var f depfile.File
	if err := decodeStrict(path, data, &f); err != nil {
		add("", nil, err.Error(), false)
		return out
	}
	// Each dependency on its own, so that one bad entry does not hide the next.
	keys := make([]string, 0, len(f.Dependencies))
	for k := range f.Dependencies {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	perDep := map[string]bool{}
	for _, k := range keys {
		one := depfile.File{Default: f.Default, Dependencies: map[string]depfile.Dependency{k: f.Dependencies[k]}}
		if _, err := one.Config(); err != nil {
			perDep[k] = true
			add("", nil, strings.TrimPrefix(err.Error(), "dependencymap: "), false)
		}
	}
	if _, err := depfile.Load(path); err != nil && len(perDep) == 0 {
		// A problem outside the dependencies (the default policy, models, exempt tools).
		add("", nil, strings.TrimPrefix(err.Error(), "dependencymap: "), false)
		return out
	}
	// Go on with the dependencies that are valid, so their timeouts are checked too.
	good := f
	good.Dependencies = map[string]depfile.Dependency{}
	for _, k := range keys {
		if !perDep[k] {
			good.Dependencies[k] = f.Dependencies[k]
		}
	}
	cfg, err := good.Config()
	if err != nil {
		add("", nil, strings.TrimPrefix(err.Error(), "dependencymap: "), false)
		return out
	}
	m, err := dependencymap.New(cfg)
	if err != nil {
		add("", nil, err.Error(), false)
		return out
	}
	for _, k := range keys {
		if perDep[k] {
			continue
		}
		b, ok := m.Get(k)
		if !ok {
			continue
		}
		p := b.Policy()
		field := "dependencies." + k + ".policy."
		if p.MinimumCalls < 5 {
			add(field+"minimum_calls", p.MinimumCalls, "a volume gate below 5 trips on a handful of samples; widen the window instead", true)
		}
		if len(f.Dependencies[k].Tools) == 0 && len(f.Dependencies[k].Hosts) == 0 {
			add("dependencies."+k+".tools", "[]", "no tools and no hosts: nothing reaches this breaker", true)
		}
		if tf == nil {
			continue
		}
		for _, tool := range f.Dependencies[k].Tools {
			tt, ok := tf.Tools[tool]
			if !ok {
				continue
			}
			l, errs := layers(tf, tool, tt)
			for _, e := range errs {
				out = append(out, finding{file: tfPath, field: e.field, value: e.value, problem: e.problem})
			}
			if errs != nil {
				continue
			}
			if err := l.Validate(); err != nil {
				out = append(out, finding{file: tfPath, field: "tools." + tool, value: tt.Timeout,
					problem: strings.TrimPrefix(err.Error(), "tooltimeout: ")})
			}
			if need := l.Need(); p.ProbeLease < need {
				add(field+"probe_lease", p.ProbeLease, fmt.Sprintf("shorter than %s's longest call (%v = timeout %v × %d attempts + backoff %v): a second probe would go while the first still runs",
					tool, need, l.ToolTimeout, max(l.Attempts, 1), l.Backoff), false)
			}
		}
	}
	if tf != nil {
		var unknown []string
		for tool := range tf.Tools {
			if _, guarded := m.DependencyOf(tool); !slices.ContainsFunc(keys, func(k string) bool { return slices.Contains(f.Dependencies[k].Tools, tool) }) && guarded {
				unknown = append(unknown, tool)
			}
		}
		slices.Sort(unknown)
		for _, tool := range unknown {
			out = append(out, finding{file: tfPath, field: "tools." + tool, value: tool, warn: true,
				problem: "not listed under any dependency of " + path + ": it gets a breaker of its own"})
		}
	}
	return out
}

type fieldErr struct {
	field   string
	value   any
	problem string
}

func layers(tf *timeoutsFile, tool string, tt toolTimeouts) (tooltimeout.Layers, []fieldErr) {
	var errs []fieldErr
	dur := func(field, v string, required bool) time.Duration {
		if v == "" {
			if required {
				errs = append(errs, fieldErr{field, `""`, "required"})
			}
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fieldErr{field, fmt.Sprintf("%q", v), `want a duration such as "5s"`})
		}
		return d
	}
	l := tooltimeout.Layers{
		ToolTimeout: dur("tools."+tool+".timeout", tt.Timeout, true),
		Attempts:    tt.Attempts,
		Backoff:     dur("tools."+tool+".backoff", tt.Backoff, false),
		Turn:        dur("turn", tf.Turn, false),
	}
	if tt.Attempts < 0 {
		errs = append(errs, fieldErr{"tools." + tool + ".attempts", tt.Attempts, "must be at least 1"})
	}
	if tt.SubAgent != "" {
		l.SubAgent = dur("tools."+tool+".sub_agent", tt.SubAgent, false)
	} else {
		l.SubAgent = dur("sub_agent", tf.SubAgent, false)
	}
	if l.ToolTimeout == 0 && len(errs) == 0 {
		errs = append(errs, fieldErr{"tools." + tool + ".timeout", tt.Timeout, "must be more than zero"})
	}
	return l, errs
}
