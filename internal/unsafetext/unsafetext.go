// Package unsafetext says which characters must not be shown as they are: in a name, a
// log line, a metric label or text the model reads. Package redact cleans and checks
// names with it, and the telemetry's label sanitiser replaces the same characters, so
// that a character a dependency key may not hold cannot reach a label either.
package unsafetext

import "unicode"

// Rune reports characters that must not be printed as they are: controls (C0, DEL,
// C1), format characters (Cf: bidirectional overrides and isolates such as U+202E and
// U+2066, zero-width joiners, BOM), line and paragraph separators, private use and
// non-characters.
func Rune(r rune) bool {
	if r < 0x80 {
		return r < 0x20 || r == 0x7f // the common case, without the Unicode tables
	}
	switch {
	case r < 0xa0:
		return true // C1
	case r == 0x2028, r == 0x2029:
		return true
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r):
		return true
	case r >= 0xfdd0 && r <= 0xfdef, r&0xfffe == 0xfffe:
		return true
	}
	return false
}
