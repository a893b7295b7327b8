package main

import (
	"slices"
	"strings"

	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

// lintMutatingWithoutProbe warns about each dependency of the file whose tools are all
// in mutating (a comma-separated list, as callbacks.Config.MutatingTools) and that
// has no probe: a mutation is never the probe, so nothing can close its breaker once
// it opened, short of an operator. A file that does not load is left to lintDeps.
func lintMutatingWithoutProbe(path, mutating string) []finding {
	if mutating == "" {
		return nil
	}
	var muts []string
	for _, t := range strings.Split(mutating, ",") {
		if t = strings.TrimSpace(t); t != "" {
			muts = append(muts, t)
		}
	}
	cfg, err := depfile.Load(path)
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
		d := cfg.Dependencies[k]
		if d.Probe != nil || len(d.Tools) == 0 || !allIn(d.Tools, muts) {
			continue
		}
		out = append(out, finding{file: path, field: "dependencies." + k + ".probe", value: "none", warn: true,
			problem: "every tool of this dependency is mutating (" + strings.Join(d.Tools, ", ") + ") and a mutation is never the probe: " +
				"once its breaker opens nothing closes it but an operator; give it a probe (a health url)"})
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
