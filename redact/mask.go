package redact

import (
	"regexp"
	"strings"
)

// Masked replaces each secret Mask finds.
const Masked = "[REDACTED]"

// maskRule is one secret shape and its replacement (which may keep a harmless prefix
// with $1).
type maskRule struct {
	re   *regexp.Regexp
	repl string
	// hints are lower-case literals of which the text must hold one for the rule to
	// match: regexps are slow, and most text holds none of them. nil: always run.
	hints []string
}

// maskRules run in order; earlier rules take the more specific shapes, so that the
// generic long-token rules do not leave half a key behind.
var maskRules = []maskRule{
	// PEM private keys, including one cut off before its END line.
	{regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|$)`), Masked, []string{"private key"}},
	// Passwords in URLs and DSNs: scheme://user:password@host keeps scheme and user.
	{regexp.MustCompile(`(://[^\s:/@]*):[^\s@/]*@`), "${1}:" + Masked + "@", []string{"://"}},
	// Authorization schemes.
	{regexp.MustCompile(`(?i)\b(bearer|basic|token|digest)(\s+)[A-Za-z0-9\-._~+/]+=*`), "${1}${2}" + Masked, []string{"bearer", "basic", "token", "digest"}},
	// JSON Web Tokens (header.payload.signature, base64url).
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*`), Masked, []string{"eyj"}},
	// Cloud and SaaS keys with a recognisable prefix.
	{regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b`), Masked, []string{"akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "abia", "acca"}}, // AWS access key IDs
	{regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}\b`), Masked, []string{"aiza"}},                                                   // Google API keys
	{regexp.MustCompile(`\bya29\.[0-9A-Za-z_\-]{20,}`), Masked, []string{"ya29."}},                                                 // Google OAuth access tokens
	{regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{30,}\b`), Masked, []string{"gh", "github_pat_"}}, // GitHub tokens
	{regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`), Masked, []string{"xox"}},                                              // Slack tokens
	{regexp.MustCompile(`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b`), Masked, []string{"_live_", "_test_"}},                  // Stripe keys
	{regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{20,}`), Masked, []string{"sk-"}},                                                      // OpenAI-style keys
	// key=value and "key": "value" pairs whose key names a secret.
	{regexp.MustCompile(`(?i)((?:password|passwd|pwd|pass|secret|token|api[_\-]?key|apikey|access[_\-]?key|secret[_\-]?key|private[_\-]?key|client[_\-]?secret|credentials?|auth|authorization|session[_\-]?id|cookie)["']?\s*[:=]\s*["']?)[^\s"',;&}]+`), "${1}" + Masked, []string{"pass", "pwd", "secret", "token", "key", "credential", "auth", "session", "cookie"}},
	// Email addresses keep their domain.
	{regexp.MustCompile(`[A-Za-z0-9._%+\-]+@([A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,})`), Masked + "@${1}", []string{"@"}},
}

// cardRe finds digit runs shaped like payment card numbers; Luhn decides.
var cardRe = regexp.MustCompile(`\b\d(?:[ \-]?\d){12,18}\b`)

// Mask replaces common secret shapes in s with [Masked]: private keys, passwords in
// URLs and DSNs, Authorization values, JWTs, cloud and SaaS keys (AWS, Google, GitHub,
// Slack, Stripe, OpenAI-style), values of keys named like secrets (password=, token:,
// api_key, ...), the local part of email addresses, long hex and base64 runs, and
// digit runs that pass the Luhn check (card numbers). It is best effort and keeps the
// surrounding text: it is meant for excerpts an operator opted in to, never for text
// shown to the model.
func Mask(s string) string { return mask(s, true) }

// mask applies the rules, and the long-run rule when longRuns is set.
func mask(s string, longRuns bool) string {
	lower := strings.ToLower(s)
	for _, r := range maskRules {
		if r.hints != nil && !containsAny(lower, r.hints) {
			continue
		}
		s = r.re.ReplaceAllString(s, r.repl)
	}
	if longRuns {
		s = maskLongRuns(s)
	}
	return cardRe.ReplaceAllStringFunc(s, func(m string) string {
		if luhn(m) {
			return Masked
		}
		return m
	})
}

// minRun is the shortest run of base64 characters masked as a secret.
const minRun = 32

// maskLongRuns replaces runs of at least minRun base64 (or hex, or base64url)
// characters, with their '=' padding, by Masked: keys, tokens and hashes used as
// secrets. A hand-written scan: a counted repetition makes a slow regexp.
func maskLongRuns(s string) string {
	var b strings.Builder
	start, last := -1, 0
	flush := func(end int) {
		if start >= 0 && end-start >= minRun {
			for end < len(s) && s[end] == '=' {
				end++
			}
			if b.Len() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:start])
			b.WriteString(Masked)
			last = end
		}
		start = -1
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-' {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
	if last == 0 {
		return s
	}
	b.WriteString(s[min(last, len(s)):])
	return b.String()
}

// luhn reports whether the digits of s pass the Luhn check.
func luhn(s string) bool {
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
	if len(digits) < 13 || len(digits) > 19 {
		return false
	}
	sum, double := 0, false
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
