package payloads

import (
	"strings"

	"github.com/agentbreaker/agentbreaker/classify"
)

// phrases say each failure class in plain words for the model. They are the only
// source of a payload's reason besides names from configuration.
var phrases = map[classify.Class]string{
	classify.ClassBreakerOpen:       "it is not accepting requests right now",
	classify.ClassBulkheadFull:      "too many requests to it are already in progress",
	classify.ClassTimeout:           "recent requests to it timed out",
	classify.ClassConnectTimeout:    "connecting to it timed out",
	classify.ClassHTTP408:           "recent requests to it timed out",
	classify.ClassHTTP5xx:           "it has been returning server errors",
	classify.ClassHTTP429:           "it is limiting how many requests it accepts",
	classify.ClassConnectionRefused: "it is refusing connections",
	classify.ClassDNS:               "its address could not be resolved",
	classify.ClassTLS:               "secure connections to it are failing",
	classify.ClassTLSConfig:         "secure connections to it are failing",
	classify.ClassRequestConfig:     "this agent's settings for it are missing or invalid",
	classify.ClassConnectionReset:   "connections to it are breaking",
	classify.ClassTransport:         "connections to it are failing",
	classify.ClassCanceled:          "the request was cancelled",
	classify.ClassDeadline:          "the request ran out of time",
	classify.ClassAuth:              "it is rejecting our credentials",
	classify.ClassRefused:           "it declined the request",
}

// Phrase returns the plain-words description of a failure class used in reasons, for
// callers that compose their own messages. Classes without a specific phrase get a
// generic one.
func Phrase(c classify.Class) string { return phrase(c) }

func phrase(c classify.Class) string {
	if p, ok := phrases[c]; ok {
		return p
	}
	return "it has been failing"
}

// maxName caps names copied into payloads.
const maxName = 64

// CleanName returns name as payloads print it, for callers composing their own
// model-facing text; see cleanName.
func CleanName(name string) string { return cleanName(name) }

// cleanName keeps a configured name readable and harmless: letters, digits and a few
// separators pass; anything else (control characters, quotes, markup, newlines) becomes
// '_'. Names come from configuration, not from upstream, but a payload is a prompt and
// gets the same care.
func cleanName(s string) string {
	if s == "" {
		return "the service"
	}
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= maxName {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			r == '-', r == '_', r == '.', r == ':', r == '@', r == '/', r == ' ':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// maxAlternatives caps the alternative tool names in one payload.
const maxAlternatives = 10

func cleanNames(names []string) []string {
	var out []string
	for _, n := range names {
		if n == "" {
			continue
		}
		if len(out) == maxAlternatives {
			break
		}
		out = append(out, cleanName(n))
	}
	return out
}
