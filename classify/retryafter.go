package classify

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxSeconds is the largest whole number of seconds a time.Duration holds.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// ParseRetryAfter parses the value of a Retry-After header, in either of
// its two forms: a whole number of seconds ("120") or an HTTP date
// ("Wed, 21 Oct 2015 07:28:00 GMT", or the older forms [http.ParseTime]
// accepts). A date is measured from now; the zero time means [time.Now].
//
// A date that has already passed gives (0, true): the server asked for no
// further wait. Anything else that cannot be a delay gives (0, false):
// empty or malformed text, a negative or fractional number, or a delay too
// long for a time.Duration. The result is never capped; callers that use it
// as a cool-down floor should apply their own upper bound.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if allDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > maxSeconds {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if now.IsZero() {
		now = time.Now()
	}
	if !t.After(now) {
		return 0, true
	}
	d := t.Sub(now)
	if d == math.MaxInt64 {
		// Sub saturates; a date this far ahead does not fit a Duration.
		return 0, false
	}
	return d, true
}

// retryAfterHeader reads the Retry-After-Ms header (milliseconds, sent by
// OpenAI-compatible APIs and preferred by their SDKs), else Retry-After.
func retryAfterHeader(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if d, ok := retryAfterMillis(ms); ok {
			return d, true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	return ParseRetryAfter(v, now)
}

// RetryInfoDelay finds the server's requested delay in the details of a
// Google API error, such as [genai.APIError].Details. Gemini attaches it to
// RESOURCE_EXHAUSTED errors as a google.rpc.RetryInfo entry:
//
//	{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "40s"}
//
// The delay may be a protobuf JSON duration string ("40s", "0.5s",
// "1.000000001s") or an object with "seconds" and "nanos". The first valid
// RetryInfo entry wins; negative or oversized delays are skipped. It
// returns (0, false) when there is none.
func RetryInfoDelay(details []map[string]any) (time.Duration, bool) {
	for _, d := range details {
		typ, _ := d["@type"].(string)
		if !strings.HasSuffix(typ, "google.rpc.RetryInfo") {
			continue
		}
		v, ok := d["retryDelay"]
		if !ok {
			// The protobuf JSON mapping also accepts the original field name.
			v = d["retry_delay"]
		}
		if dur, ok := protoDuration(v); ok {
			return dur, true
		}
	}
	return 0, false
}

// protoDuration converts a google.protobuf.Duration in either JSON form.
func protoDuration(v any) (time.Duration, bool) {
	switch v := v.(type) {
	case string:
		return parseProtoDuration(v)
	case map[string]any:
		secs, ok := asInt(v["seconds"])
		if !ok {
			if _, present := v["seconds"]; present {
				return 0, false
			}
			secs = 0 // proto JSON omits zero fields
		}
		nanos, ok := asInt(v["nanos"])
		if !ok {
			if _, present := v["nanos"]; present {
				return 0, false
			}
			nanos = 0
		}
		if secs < 0 || nanos < 0 || nanos >= int64(time.Second) || secs > maxSeconds {
			return 0, false
		}
		return addNanos(secs, nanos)
	}
	return 0, false
}

// parseProtoDuration parses the protobuf JSON form of a duration: decimal
// seconds with at most nine fractional digits and an "s" suffix. Negative
// durations are rejected because a negative wait means nothing here.
func parseProtoDuration(s string) (time.Duration, bool) {
	s, ok := strings.CutSuffix(strings.TrimSpace(s), "s")
	if !ok {
		return 0, false
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	if !allDigits(whole) || (hasFrac && !allDigits(frac)) || len(frac) > 9 {
		return 0, false
	}
	secs, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || secs > maxSeconds {
		return 0, false
	}
	var nanos int64
	if hasFrac {
		n, _ := strconv.ParseInt(frac, 10, 64) // at most nine digits: cannot fail
		for range 9 - len(frac) {
			n *= 10
		}
		nanos = n
	}
	return addNanos(secs, nanos)
}

// addNanos returns secs seconds plus nanos nanoseconds, or false if the
// sum does not fit a Duration. secs must be in [0, maxSeconds].
func addNanos(secs, nanos int64) (time.Duration, bool) {
	d := time.Duration(secs) * time.Second
	if int64(d) > math.MaxInt64-nanos {
		return 0, false
	}
	return d + time.Duration(nanos), true
}

// allDigits reports whether s is non-empty and only ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// retryAfterMillis parses Retry-After-Ms: a non-negative count of milliseconds,
// possibly with a fraction, up to the same bound as Retry-After's seconds.
func retryAfterMillis(v string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || math.IsNaN(f) || f >= float64(math.MaxInt64/int64(time.Millisecond)) {
		return 0, false
	}
	return time.Duration(f * float64(time.Millisecond)), true
}
