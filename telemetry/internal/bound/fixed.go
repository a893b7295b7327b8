package bound

import (
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// ErrorClasses are the error_class values outside the label cap: every class of
// package classify (classify.Classes). A classifier's own class names are capped.
func ErrorClasses() []string {
	var out []string
	for _, c := range classify.Classes() {
		out = append(out, string(c))
	}
	return out
}

// Causes are the cause values outside the label cap: every modelfailover.Cause
// (the classes and the failover's own causes) and Unknown, which an empty cause is
// reported as. A classifier's own class names are capped.
func Causes() []string {
	out := []string{Unknown}
	for _, c := range modelfailover.Causes() {
		out = append(out, string(c))
	}
	return out
}
