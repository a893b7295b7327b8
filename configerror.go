package agentbreaker

import "fmt"

// ConfigError reports one invalid configuration value: which package refused it, the
// field, the value that was given and what is wrong with it. Every constructor in the
// module (New, MustNew, Open, Load) returns this type for bad input, so one errors.As
// finds it whichever package refused the value; each package also names it
// ConfigError (an alias of this type).
type ConfigError struct {
	Package string // the package that refused the value, for example "breaker"
	Field   string // for example "Policy.Window"
	Value   any    // the value that was given
	Problem string // what is wrong with it, in words
	// Err, when set, is a sentinel of the refusing package that the error unwraps to
	// (modelfailover.ErrInvalidConfig, for one).
	Err error
}

// Unwrap returns Err.
func (e *ConfigError) Unwrap() error { return e.Err }

// Error formats the error as "package: Field = value: problem". An empty string value
// is shown as "", so that a missing name reads as one.
func (e *ConfigError) Error() string {
	v := e.Value
	if s, ok := v.(string); ok && s == "" {
		v = `""`
	}
	if e.Package == "" {
		return fmt.Sprintf("%s = %v: %s", e.Field, v, e.Problem)
	}
	return fmt.Sprintf("%s: %s = %v: %s", e.Package, e.Field, v, e.Problem)
}
