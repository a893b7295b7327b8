package redact

import (
	"strconv"
	"unicode/utf8"
)

// MaxNameLen is the longest name, in bytes, that CheckName accepts: dependency keys,
// tool names, route names, model names and regions.
const MaxNameLen = 128

// CheckName returns nil when value is a usable name, or a *ConfigError naming field
// and the value (cut to 80 bytes so an absurd name cannot flood a log; its Error
// quotes a value that would not print)
// when it is empty, longer than MaxNameLen bytes, not valid UTF-8, or holds control
// characters, format characters (bidirectional overrides, zero-width characters),
// line separators or leading or trailing spaces. Such names break Prometheus
// expositions (invalid UTF-8 makes a scrape fail), log parsers and admin pages.
func CheckName(field, value string) error {
	problem := ""
	switch {
	case value == "":
		problem = "must not be empty"
	case len(value) > MaxNameLen:
		problem = "is " + strconv.Itoa(len(value)) + " bytes long: at most " + strconv.Itoa(MaxNameLen)
	case !utf8.ValidString(value):
		problem = "is not valid UTF-8"
	case value[0] == ' ' || value[len(value)-1] == ' ':
		problem = "must not start or end with a space"
	default:
		for _, r := range value {
			if unsafeRune(r) || r == '\t' || r == '\n' || r == '\r' {
				problem = "holds the control or format character " + strconv.QuoteRune(r)
				break
			}
		}
	}
	if problem == "" {
		return nil
	}
	return &ConfigError{Package: "redact", Field: field, Value: cutName(value), Problem: problem}
}

// cutName is a refused name for an error, cut to 80 bytes.
func cutName(v string) string {
	if len(v) > 80 {
		return v[:80] + "…"
	}
	return v
}

// RepairName returns a usable name for value: [Clean]ed (invalid UTF-8 dropped,
// controls and format characters turned into single spaces, trimmed) and cut to
// MaxNameLen bytes, or "invalid" when nothing is left. CheckName accepts every name
// it returns. Use it where refusing is not possible (a name the model sent).
func RepairName(value string) string {
	if CheckName("", value) == nil {
		return value
	}
	s := Clean(value, MaxNameLen)
	if s == "" {
		return "invalid"
	}
	return s
}
