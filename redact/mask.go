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
}

// maskRules run in order; earlier rules take the more specific shapes, so that the
// generic long-token rules do not leave half a key behind.
var maskRules = []maskRule{
	// PEM private keys, including one cut off before its END line.
	{regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|$)`), Masked},
	// Passwords in URLs and DSNs: scheme://user:password@host keeps scheme and user.
	{regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*):[^\s@/]*@`), "${1}:" + Masked + "@"},
	// Authorization schemes.
	{regexp.MustCompile(`(?i)\b(bearer|basic|token|digest)(\s+)[A-Za-z0-9\-._~+/]+=*`), "${1}${2}" + Masked},
	// JSON Web Tokens (header.payload.signature, base64url).
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*`), Masked},
	// Cloud and SaaS keys with a recognisable prefix.
	{regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b`), Masked}, // AWS access key IDs
	{regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}\b`), Masked},                                            // Google API keys
	{regexp.MustCompile(`\bya29\.[0-9A-Za-z_\-]{20,}`), Masked},                                           // Google OAuth access tokens
	{regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{30,}\b`), Masked},       // GitHub tokens
	{regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`), Masked},                                      // Slack tokens
	{regexp.MustCompile(`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b`), Masked},                       // Stripe keys
	{regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{20,}`), Masked},                                              // OpenAI-style keys
	// key=value and "key": "value" pairs whose key names a secret.
	{regexp.MustCompile(`(?i)((?:password|passwd|pwd|pass|secret|token|api[_\-]?key|apikey|access[_\-]?key|secret[_\-]?key|private[_\-]?key|client[_\-]?secret|credentials?|auth|authorization|session[_\-]?id|cookie)["']?\s*[:=]\s*["']?)[^\s"',;&}]+`), "${1}" + Masked},
	// Email addresses keep their domain.
	{regexp.MustCompile(`[A-Za-z0-9._%+\-]+@([A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,})`), Masked + "@${1}"},
	// Long hex and base64 runs: keys, hashes used as secrets, session tokens.
	{regexp.MustCompile(`\b[0-9A-Fa-f]{32,}\b`), Masked},
	{regexp.MustCompile(`[A-Za-z0-9+/_\-]{32,}={0,2}`), Masked},
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
func Mask(s string) string {
	for _, r := range maskRules {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return cardRe.ReplaceAllStringFunc(s, func(m string) string {
		if luhn(m) {
			return Masked
		}
		return m
	})
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
