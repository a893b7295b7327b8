package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// finding is one problem (or, when warn, a warning) in a file, in the file's terms.
type finding struct {
	file string
	depfile.Problem
	warn bool
}

func (f finding) String() string {
	kind := "error"
	if f.warn {
		kind = "warning"
	}
	return problemLine(f.file, f.Problem, kind)
}

func lint(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeouts := fs.String("timeouts", "", "YAML or JSON file of the tools' layered timeouts (turn, sub_agent, tools: {name: {timeout, attempts, backoff, sub_agent}})")
	strict := fs.Bool("strict", false, "fail on warnings too")
	mutating := fs.String("mutating", "", "comma-separated tools with side effects (callbacks.Config.MutatingTools): warns about a dependency whose tools are all mutating and that has no probe")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: agentbreaker lint [flags] DEPENDENCY-FILE...\n\nChecks dependency files (YAML or JSON, as depfile.Load reads them) and, with\n-timeouts, that each tool's timeout × attempts + backoff fits its sub-agent's budget\nand the turn's, and that probe leases outlast a probe's call. Prints every problem\nas FILE:LINE:COLUMN: KIND: KEY = VALUE: PROBLEM; exits 1 when there is an error\n(or, with -strict, a warning).\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErrorf("want at least one dependency file")
	}
	var tf *timeoutsFile
	var found, inTimeouts []finding
	if *timeouts != "" {
		var err error
		if tf, err = readTimeouts(*timeouts); err != nil {
			return err
		}
		for _, p := range tf.problems {
			inTimeouts = append(inTimeouts, finding{file: tf.path, Problem: p})
		}
		inTimeouts = append(inTimeouts, lintLayers(tf)...)
	}
	for _, path := range fs.Args() {
		d, err := depfile.Read(path)
		if err != nil {
			return err
		}
		var mine []finding
		for _, f := range lintDeps(d, tf) {
			if f.file == d.Name {
				mine = append(mine, f)
			} else {
				inTimeouts = append(inTimeouts, f)
			}
		}
		mine = append(mine, lintMutatingWithoutProbe(d, *mutating)...) // lint_probe.go
		slices.SortStableFunc(mine, byLine)                            // each file from its top down
		found = append(found, mine...)
	}
	slices.SortStableFunc(inTimeouts, byLine)
	found = append(found, inTimeouts...)
	errs, warns := 0, 0
	for _, f := range found {
		fmt.Fprintln(stdout, f)
		if f.warn {
			warns++
		} else {
			errs++
		}
	}
	files := strings.Join(fs.Args(), ", ")
	if *timeouts != "" {
		files += ", " + *timeouts
	}
	switch {
	case len(found) == 0:
		fmt.Fprintf(stdout, "%s: ok\n", files)
	default:
		fmt.Fprintf(stdout, "%s: %s, %s\n", files, count(errs, "error"), count(warns, "warning"))
	}
	if errs > 0 || *strict && warns > 0 {
		return errProblems
	}
	return nil
}

func byLine(a, b finding) int {
	if a.Line != b.Line {
		return a.Line - b.Line
	}
	return a.Column - b.Column
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// lintLayers checks that each tool's layered timeouts fit, whatever its dependency.
func lintLayers(tf *timeoutsFile) []finding {
	var out []finding
	for _, tool := range tf.order {
		l, ok := tf.layers(tool)
		if !ok {
			continue // its values have problems, reported already
		}
		if err := l.Validate(); err != nil {
			p := depfile.Problem{Path: "tools." + tool, Message: err.Error()}
			if fe, ok := errors.AsType[*tooltimeout.FitError](err); ok {
				p.Message = "layered timeouts do not fit: " + fe.Detail
			}
			p.Line, p.Column = tf.position(p.Path)
			out = append(out, finding{file: tf.path, Problem: p})
		}
	}
	return out
}

// layers returns a tool's layered timeouts, or false when the file's values for it
// (or the turn's, the sub-agent's) have problems.
func (tf *timeoutsFile) layers(tool string) (tooltimeout.Layers, bool) {
	for _, p := range tf.problems {
		if p.Path == "turn" || p.Path == "sub_agent" || p.Path == "tools."+tool || strings.HasPrefix(p.Path, "tools."+tool+".") {
			return tooltimeout.Layers{}, false
		}
	}
	tt := tf.tools[tool]
	l := tooltimeout.Layers{ToolTimeout: tt.timeout, Attempts: tt.attempts, Backoff: tt.backoff, SubAgent: tf.subAgent, Turn: tf.turn}
	if tt.subAgent > 0 {
		l.SubAgent = tt.subAgent
	}
	return l, true
}

// lintDeps reports a dependency file's problems, then, for the dependencies without
// any, the warnings and the probe leases against the tools' timeouts.
func lintDeps(d *depfile.Document, tf *timeoutsFile) []finding {
	l := &depLint{d: d}
	for _, p := range d.Problems {
		l.out = append(l.out, finding{file: d.Name, Problem: p})
	}
	// The dependencies with no problem of their own, checked further on their own
	// (with the file's default, unless the default is what is wrong).
	if l.hasProblem("default") || slices.ContainsFunc(d.Problems, func(p depfile.Problem) bool { return p.Path == "" }) {
		return l.out
	}
	warned := map[string]bool{}
	if n := d.File.Default.MinimumCalls; n > 0 && n < 5 {
		warned["default.minimum_calls"] = true
		l.add(true, "default.minimum_calls", n, "a volume gate below 5 trips on a handful of samples; widen the window instead")
	}
	good := depfile.File{Default: d.File.Default, Dependencies: map[string]depfile.Dependency{}}
	for k, dep := range d.File.Dependencies {
		if !l.hasProblem("dependencies." + k) {
			good.Dependencies[k] = dep
		}
	}
	cfg, err := good.Config()
	if err != nil {
		return l.out // a problem across dependencies (a tool listed twice): reported above
	}
	m, err := dependencymap.New(cfg)
	if err != nil {
		return l.out
	}
	for _, k := range slices.Sorted(maps.Keys(good.Dependencies)) {
		b, _ := m.Get(k)
		p := b.Policy()
		if src := d.PolicySource(k, "minimum_calls"); src != "" && p.MinimumCalls < 5 && !warned[src] {
			warned[src] = true
			l.add(true, src, p.MinimumCalls, "a volume gate below 5 trips on a handful of samples; widen the window instead")
		}
		dep := good.Dependencies[k]
		if len(dep.Tools) == 0 && len(dep.Hosts) == 0 {
			l.add(true, "dependencies."+k, nil, "lists no tools and no hosts: nothing reaches this breaker")
		}
		if tf != nil {
			l.probeLeases(k, dep, p, tf)
		}
	}
	if tf != nil {
		l.unlistedTools(m, tf)
	}
	return l.out
}

// depLint collects the findings about one dependency file, d.
type depLint struct {
	d   *depfile.Document
	out []finding
}

// add adds a finding at path, a warning if warn, with value and the message.
func (l *depLint) add(warn bool, path string, value any, format string, args ...any) {
	line, col := l.d.Position(path)
	l.out = append(l.out, finding{file: l.d.Name, warn: warn,
		Problem: depfile.Problem{Path: path, Line: line, Column: col, Value: value, Message: fmt.Sprintf(format, args...)}})
}

// hasProblem reports whether the file has a problem at prefix or below it.
func (l *depLint) hasProblem(prefix string) bool {
	return slices.ContainsFunc(l.d.Problems, func(p depfile.Problem) bool {
		return p.Path == prefix || strings.HasPrefix(p.Path, prefix+".") || strings.HasPrefix(p.Path, prefix+"[")
	})
}

// probeLeases reports dependency k's probe lease, p's, when it is shorter than the
// longest call of one of dep's tools that the timeouts file tf lists.
func (l *depLint) probeLeases(k string, dep depfile.Dependency, p breaker.Policy, tf *timeoutsFile) {
	for _, tool := range dep.Tools {
		layers, ok := tf.layers(tool)
		if _, listed := tf.tools[tool]; !listed || !ok {
			continue
		}
		if need := layers.Need(); p.ProbeLease < need {
			why := fmt.Sprintf("shorter than %s's longest call (%v = timeout %v × %d attempts + backoff %v, %s): a second probe would go while the first still runs",
				tool, need, layers.ToolTimeout, max(layers.Attempts, 1), layers.Backoff, tf.where("tools."+tool))
			if src := l.d.PolicySource(k, "probe_lease"); src != "" {
				l.add(false, src, p.ProbeLease, "%s", why)
			} else {
				l.add(false, "dependencies."+k, nil, "probe_lease is not set, and its default %v is %s", p.ProbeLease, why)
			}
		}
	}
}

// unlistedTools warns about each tool of the timeouts file tf that map m guards but
// no dependency of the file lists: it gets a breaker of its own.
func (l *depLint) unlistedTools(m *dependencymap.Map, tf *timeoutsFile) {
	d := l.d
	for _, tool := range tf.order {
		if _, guarded := m.DependencyOf(tool); guarded && !slices.ContainsFunc(slices.Collect(maps.Values(d.File.Dependencies)),
			func(dep depfile.Dependency) bool { return slices.Contains(dep.Tools, tool) }) {
			line, col := tf.position("tools." + tool)
			l.out = append(l.out, finding{file: tf.path, warn: true, Problem: depfile.Problem{Path: "tools." + tool, Line: line, Column: col,
				Message: "not listed under any dependency of " + d.Name + ": it gets a breaker of its own"}})
		}
	}
}
