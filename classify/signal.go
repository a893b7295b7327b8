package classify

import (
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// maxSignalText bounds how much of a dependency's text is searched for an outage
// signal: a signal is stated near the start, and a 1 MB body must cost no more than
// a short one.
const maxSignalText = 4096

// capacityNames are the names an answer uses to say that the dependency, or something
// behind it, is down or short of capacity. They count only when written as a name
// (see isName): in prose, "the item is unavailable in your region" is an answer.
var capacityNames = map[string]Class{
	"unavailable":           ClassHTTP5xx,
	"service_unavailable":   ClassHTTP5xx,
	"internal":              ClassHTTP5xx,
	"internal_error":        ClassHTTP5xx,
	"internal_server_error": ClassHTTP5xx,
	"server_error":          ClassHTTP5xx,
	"bad_gateway":           ClassHTTP5xx,
	"upstream_error":        ClassHTTP5xx,
	"data_loss":             ClassHTTP5xx,
	"overloaded":            ClassHTTP429,
	"resource_exhausted":    ClassHTTP429,
	"rate_limited":          ClassHTTP429,
	"rate_limit_exceeded":   ClassHTTP429,
	"too_many_requests":     ClassHTTP429,
	"quota_exceeded":        ClassHTTP429,
	"throttled":             ClassHTTP429,
	"deadline_exceeded":     ClassHTTP408,
	"gateway_timeout":       ClassHTTP408,
	"request_timeout":       ClassHTTP408,
	"timed_out":             ClassHTTP408,
	"timeout":               ClassHTTP408,
	"etimedout":             ClassHTTP408,
	"econnrefused":          ClassHTTP5xx,
	"econnreset":            ClassHTTP5xx,
	"ehostunreach":          ClassHTTP5xx,
}

// stackMarkers are the openings of stack traces in the languages servers are written
// in: a server that prints one has crashed, which is an outage, not an answer.
var stackMarkers = []string{
	"goroutine 1 [", "panic: runtime error", "Traceback (most recent call last)",
	"Exception in thread \"", "\n\tat ", "\n    at ", "NullPointerException", "Segmentation fault",
}

// TextSignal reports whether text written by a dependency (an MCP tool's isError
// content, the error of an in-band failure) says that the dependency or something
// behind it failed, rather than that it answered and declined. It finds, in the first
// 4 KiB:
//
//   - a status of 500-599, 429 or 408 written as a status: after "HTTP", "status" or
//     "code" ("HTTP 503", "status code: 429"), or followed by its reason phrase
//     ("502 Bad Gateway");
//   - a capacity or outage name written as a name, in capitals or snake_case
//     (UNAVAILABLE, RESOURCE_EXHAUSTED, rate_limited, DEADLINE_EXCEEDED, ECONNRESET);
//   - a stack trace.
//
// Other numbers (an amount, an order number, a 4xx) and the same words in prose are
// not signals. The classification is Failed (the dependency answered, if only to say
// it failed) with the class of the signal: http_5xx, http_429 or http_408.
func TextSignal(text string) (Classification, bool) {
	if len(text) > maxSignalText {
		text = text[:maxSignalText]
	}
	for _, m := range stackMarkers {
		if strings.Contains(text, m) {
			return answered(ClassHTTP5xx, http.StatusInternalServerError), true
		}
	}
	words := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
	for i, w := range words {
		if n, err := strconv.Atoi(w); err == nil && len(w) == 3 {
			if c, ok := statusSignal(n, words, i); ok {
				return c, true
			}
			continue
		}
		if !isName(w) {
			continue
		}
		if class, ok := capacityNames[strings.ToLower(w)]; ok {
			return answered(class, 0), true
		}
	}
	return Classification{}, false
}

// statusSignal reports whether words[i], the number n, is a failing status written
// as one.
func statusSignal(n int, words []string, i int) (Classification, bool) {
	if n != http.StatusRequestTimeout && n != http.StatusTooManyRequests && (n < 500 || n > 599) {
		return Classification{}, false
	}
	asStatus := false
	if i > 0 {
		switch strings.ToLower(words[i-1]) {
		case "http", "status", "code", "status_code", "statuscode", "http_status":
			asStatus = true
		}
	}
	if !asStatus {
		phrase := strings.Fields(http.StatusText(n))
		asStatus = len(phrase) > 0 && i+len(phrase) < len(words)
		for j := 0; asStatus && j < len(phrase); j++ {
			asStatus = strings.EqualFold(words[i+1+j], phrase[j])
		}
	}
	if !asStatus {
		return Classification{}, false
	}
	return answered(HTTPStatus(n, nil, time.Time{}).Class, n), true
}

// isName reports whether w is written as a machine-readable name: in capitals
// (UNAVAILABLE, ETIMEDOUT) or in snake_case (rate_limited).
func isName(w string) bool {
	if strings.Contains(w, "_") {
		return true
	}
	upper := false
	for _, r := range w {
		if unicode.IsLower(r) {
			return false
		}
		upper = upper || unicode.IsUpper(r)
	}
	return upper && len(w) > 1
}

// answered is the classification of a failure the dependency itself reported: it
// answered, so the outcome is Failed whatever the class's default.
func answered(class Class, status int) Classification {
	c := ForClass(class)
	c.Outcome = Failed
	c.StatusCode = status
	return c
}
