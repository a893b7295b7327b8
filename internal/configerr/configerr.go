// Package configerr re-labels an *agentbreaker.ConfigError returned by the check of
// another package (a breaker's policy, a name through redact.CheckName) as the error
// of the package whose configuration held the value, so that its Package and Field are
// what the user wrote.
package configerr

import (
	"errors"
	"strings"

	"github.com/agentbreaker/agentbreaker"
)

// Relabel returns the *agentbreaker.ConfigError in err as package pkg's, its field
// named by its place in pkg's configuration: a leading from is replaced with to
// ("Policy.Window" under Dependencies["crm"] is Dependencies["crm"].Policy.Window).
// The value, problem and sentinel are kept. An error that holds no ConfigError is
// returned as it is.
func Relabel(err error, pkg, from, to string) error {
	var ce *agentbreaker.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	out := *ce
	out.Package = pkg
	if rest, ok := strings.CutPrefix(ce.Field, from); ok {
		out.Field = to + rest
	}
	return &out
}
