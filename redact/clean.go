package redact

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentbreaker/agentbreaker/internal/unsafetext"
)

// Clean returns s made safe to print in one line: invalid UTF-8 is dropped; control
// characters (C0, DEL, C1), Unicode format characters (bidirectional overrides,
// zero-width characters, BOM) and line or paragraph separators become spaces; runs of
// white space collapse to one space; leading and trailing space is trimmed; and the
// result is cut on a character boundary to at most max bytes, with "…" marking a cut
// (the mark is counted in max). max <= 0 means no bound. Clean does not mask secrets:
// see [Excerpt].
func Clean(s string, max int) string {
	var b strings.Builder
	space := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError && size <= 1 {
			continue // invalid UTF-8
		}
		if unsafeRune(r) || unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
		if max > 0 && b.Len() > max {
			return cut(b.String(), max) // stop reading: the rest would be cut anyway
		}
	}
	return b.String()
}

// cut shortens s to at most max bytes on a character boundary, marking the cut.
func cut(s string, max int) string {
	mark := ellipsis
	if max < 2*len(ellipsis) {
		mark = ""
	}
	n := max - len(mark)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.TrimRight(s[:n], " ") + mark
}

const ellipsis = "…"

// unsafeRune reports characters that must not be printed as they are: controls, format
// characters (Cf: bidi overrides, zero-width joiners, BOM), separators other than the
// plain space, private use and non-characters. The telemetry's label sanitiser
// replaces the same characters (internal/unsafetext).
func unsafeRune(r rune) bool { return unsafetext.Rune(r) }

// Excerpt returns at most max bytes of s for an operator who opted in to seeing
// upstream text: cleaned like [Clean] and with common secret shapes masked like
// [Mask]. Only a bounded prefix of s is ever examined, so a 1 MB body costs no more
// than a short one. max <= 0 means defaultExcerptLen; it is capped at MaxExcerptLen.
func Excerpt(s string, max int) string {
	if max <= 0 {
		max = defaultExcerptLen
	}
	max = min(max, MaxExcerptLen)
	// Look past the bound so a secret that straddles it is still recognised whole,
	// then mask, then cut: cutting first could leave a secret's head unmasked.
	window := max + 256
	if len(s) > window {
		s = s[:window]
	}
	return Clean(Mask(Clean(s, 0)), max)
}

// Answer returns at most max bytes of a dependency's answer for the model to read (a
// refusal, a validation message): cleaned like [Clean], with the secret shapes [Mask]
// knows masked, but not its long hex and base64 runs, which in an answer are more often
// an order or a product identifier the model needs than a key. Prompt injections
// pass: what the model may read is the caller's decision. max <= 0 means
// defaultExcerptLen; it is capped at MaxExcerptLen.
func Answer(s string, max int) string {
	if max <= 0 {
		max = defaultExcerptLen
	}
	max = min(max, MaxExcerptLen)
	window := max + 256
	if len(s) > window {
		s = s[:window]
	}
	return Clean(mask(Clean(s, 0), false), max)
}
