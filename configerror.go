package agentbreaker

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

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

// Error formats the error as "package: Field = value: problem". A string value that is
// empty, starts or ends with a space, is not valid UTF-8 or holds a character that does
// not print is shown quoted, so that a missing or blank name reads as one and a hostile
// one cannot break a log line.
func (e *ConfigError) Error() string {
	v := e.Value
	if s, ok := v.(string); ok && (s == "" || strings.TrimSpace(s) != s || !printable(s)) {
		v = strconv.Quote(s)
	}
	if e.Package == "" {
		return fmt.Sprintf("%s = %v: %s", e.Field, v, e.Problem)
	}
	return fmt.Sprintf("%s: %s = %v: %s", e.Package, e.Field, v, e.Problem)
}

// printable reports whether s is valid UTF-8 made only of printing characters and the
// ASCII space.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
