package depfile

import (
	"fmt"
	"strings"

	"github.com/agentbreaker/agentbreaker"
)

// Problem is one thing wrong in a dependency file, in the file's own terms: the path of
// the key as written in the file (dependencies.crm.policy.window, default.minimum_calls,
// models[1].model), where it is, the value found there and what is wrong with it.
type Problem struct {
	// Path is the key the problem is about, as the file spells it; "" for the file as
	// a whole (a syntax error). A path names a key that is in the file, except for a
	// required key that is missing, which Message then says.
	Path string
	// Line and Column locate the key (or, for a syntax error, the error) in the file,
	// from 1; 0 when unknown (a File built in code has no positions).
	Line, Column int
	// Value is the value found at Path; nil when there is none to show.
	Value any
	// Message says what is wrong and, where it can, what is wanted.
	Message string
}

// ConfigError is the type each of an *Error's problems is found as by errors.As.
type ConfigError = agentbreaker.ConfigError

// literal is a value shown as the file wrote it (a number, a bool), unquoted.
type literal string

func (l literal) String() string { return string(l) }

// String formats the problem as "line 7, column 7: dependencies.crm.policy.window =
// "soon": want a positive duration such as "30s"".
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ", column %d", p.Column)
		}
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		if p.Value != nil {
			b.WriteString(" = ")
			b.WriteString(formatValue(p.Value))
		}
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

func formatValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// Error is every problem found in one dependency file. Load, ParseYAML, ParseJSON and
// File.Config return it; errors.As also finds each problem as an
// *agentbreaker.ConfigError (Field is the problem's path).
type Error struct {
	// File is the file's path as given to Load or Read; "" for bytes parsed directly.
	File     string
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("dependencymap: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap returns each problem as an *agentbreaker.ConfigError.
func (e *Error) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		problem := p.Message
		if p.Line > 0 {
			problem = fmt.Sprintf("%s (line %d)", problem, p.Line)
		}
		out[i] = &ConfigError{Package: "depfile", Field: p.Path, Value: p.Value, Problem: problem}
	}
	return out
}
