package main

import (
	"slices"
	"strings"

	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

// lintMutatingWithoutProbe warns about each dependency of the file whose tools are all
// in mutating (a comma-separated list, as callbacks.Config.SideEffects.MutatingTools)
// and that has no probe: a mutation is never the probe, so nothing can close its
// breaker once it opened, short of an operator. A file with problems is left to
// lintDeps.
func lintMutatingWithoutProbe(doc *depfile.Document, mutating string) []finding {
	if mutating == "" {
		return nil
	}
	var muts []string
	for _, t := range strings.Split(mutating, ",") {
		if t = strings.TrimSpace(t); t != "" {
			muts = append(muts, t)
		}
	}
	cfg, err := doc.Config()
	if err != nil {
		return nil
	}
	keys := make([]string, 0, len(cfg.Dependencies))
	for k := range cfg.Dependencies {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []finding
	for _, k := range keys {
		dep := cfg.Dependencies[k]
		if dep.Probe != nil || len(dep.Tools) == 0 || !allIn(dep.Tools, muts) {
			continue
		}
		path := "dependencies." + k
		line, col := doc.Position(path)
		out = append(out, finding{file: doc.Name, warn: true, Problem: depfile.Problem{Path: path + ".probe", Line: line, Column: col,
			Message: "every tool of this dependency is mutating (" + strings.Join(dep.Tools, ", ") + ") and a mutation is never the probe: " +
				"once its breaker opens nothing closes it but an operator; give it a probe (a health url)"}})
	}
	return out
}

func allIn(tools, set []string) bool {
	for _, t := range tools {
		if !slices.Contains(set, t) {
			return false
		}
	}
	return true
}
