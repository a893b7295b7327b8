package classify

import (
	"strings"
	"time"
)

// PayloadPrefix starts the "response_type" of every result map this
// library returns in place of a real tool result (for example when a
// breaker is open). [ToolResult] recognises such maps so that a short-circuit
// is never recorded as a call to the dependency.
const PayloadPrefix = "agentbreaker."

// ToolResult classifies the result map of a tool call that returned no Go
// error. Many tools report failure in-band instead, and adk-go hands the
// map to the after-tool callback either way.
//
// A map reports a failure when any of these holds:
//   - "status" is the string "error" (any case);
//   - "isError" or "is_error" is true (the MCP convention);
//   - "success" is false;
//   - "status_code", "statusCode" or "http_status" is a number >= 400;
//   - "error" is non-empty and "status" is not a success word
//     ("success", "succeeded", "ok", "completed", "done").
//
// A map that does not, but holds a map under "output" that does, reports that
// failure: adk-go's MCP toolsets hand a tool's structured content to callbacks as
// {"output": <structured content>}.
//
// A failure is then refined, looking in the map and in an "error" object
// nested in it: first by a numeric HTTP status ("status_code", "statusCode",
// "http_status", "status" or "code"), using the [HTTPStatus] rules; then by
// a word in "error_class", "error_type", "reason", "code", "status" or the
// "error" string itself, such as NOT_FOUND, invalid_argument, timeout,
// UNAVAILABLE, rate_limited, permission_denied or no_results; then by an
// outage signal in its text ("error", "message", MCP text content), by the
// [TextSignal] rules. Without any of these the dependency answered and
// declined: [ClassRefused], Failed and Healthy, so a declined card or a
// business rule never trips a breaker. "retry_after_seconds" or
// "retry_after" (seconds), or a RetryInfo entry in a nested "details" list,
// set RetryAfter.
//
// A map whose "response_type" starts with [PayloadPrefix] is this library's
// own short-circuit payload: FailedBeforeSend and Neutral, with the class
// named by its "error_class" field, or [ClassBreakerOpen] if that is not a
// known class.
//
// Anything else, including nil, empty maps and empty result lists, is a
// success. ToolResult never panics, whatever the map holds.
func ToolResult(result map[string]any) Classification {
	if len(result) == 0 {
		return ForClass(ClassNone)
	}
	r := scanResult(result)
	if strings.HasPrefix(r.responseType, PayloadPrefix) {
		return ownPayload(result)
	}
	failing := result
	if !r.failure() {
		if r.output == nil || !scanResult(r.output).failure() {
			return ForClass(ClassNone)
		}
		failing = r.output
	}
	return inBandFailure(failing)
}

// inBandFailure classifies a map that reports a failure.
func inBandFailure(m map[string]any) Classification {
	sources := []map[string]any{m}
	if nested, ok := m["error"].(map[string]any); ok {
		sources = append(sources, nested)
	}
	c, ok := failureFromCode(sources)
	if !ok {
		c, ok = failureFromWords(sources)
	}
	if !ok {
		c, ok = TextSignal(FailureText(m))
	}
	if !ok {
		c = ForClass(ClassRefused)
	}
	if d, ok := inBandRetryAfter(sources); ok {
		c.RetryAfter = d
	}
	return c
}

// textKeys hold a failure's words, in the order FailureText reads them.
var textKeys = []string{"error", "message", "error_message", "error_details", "detail", "details", "reason"}

// FailureText returns the words of a failure a result map reports in-band: its
// "error", "message", "error_message", "error_details", "detail", "details" or
// "reason" strings (also inside an "error" object, and under "output"), or the text
// of MCP content ("content": [{"type": "text", "text": ...}]), joined by "; ". It is
// the dependency's text: callers decide what of it anyone may see.
func FailureText(m map[string]any) string {
	var b strings.Builder
	appendFailureText(&b, m, 0)
	return b.String()
}

func appendFailureText(b *strings.Builder, m map[string]any, depth int) {
	if depth > 2 || b.Len() > maxSignalText {
		return
	}
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			b.WriteString(s)
		}
	}
	for _, k := range textKeys {
		switch v := m[k].(type) {
		case string:
			add(v)
		case map[string]any:
			appendFailureText(b, v, depth+1)
		}
	}
	if content, ok := m["content"].([]any); ok {
		for _, e := range content {
			if part, ok := e.(map[string]any); ok {
				s, _ := part["text"].(string)
				add(s)
			}
		}
	}
	if out, ok := m["output"].(map[string]any); ok {
		appendFailureText(b, out, depth+1)
	}
}

// ownPayload classifies one of this library's short-circuit payloads.
func ownPayload(result map[string]any) Classification {
	class, _ := result["error_class"].(string)
	c := Classification{Outcome: FailedBeforeSend, Class: rejectionClass(class), Verdict: Neutral}
	if d, ok := inBandRetryAfter([]map[string]any{result}); ok {
		c.RetryAfter = d
	}
	return c
}

// successStatuses are "status" values that override an "error" field:
// a tool may report a harmless warning there alongside a good result.
var successStatuses = map[string]bool{
	"success": true, "succeeded": true, "ok": true, "completed": true, "done": true,
}

// resultKeys is what the in-band rules read of a result map.
type resultKeys struct {
	responseType, status string
	flagged              bool // isError or is_error true, success false, or an HTTP status of 400 or more
	err                  any
	output               map[string]any
}

// inBandKeys are the keys resultKeys reads.
var inBandKeys = []string{"response_type", "status", "isError", "is_error", "success", "status_code", "statusCode", "http_status", "error", "output"}

// scanResult reads m's in-band keys: in one pass over a small map (most results,
// where ten lookups cost more than the walk), by lookup in a large one.
func scanResult(m map[string]any) (r resultKeys) {
	if len(m) <= len(inBandKeys) {
		for k, v := range m {
			r.take(k, v)
		}
		return r
	}
	for _, k := range inBandKeys {
		if v, ok := m[k]; ok {
			r.take(k, v)
		}
	}
	return r
}

func (r *resultKeys) take(k string, v any) {
	switch k {
	case "response_type":
		r.responseType, _ = v.(string)
	case "status":
		r.status, _ = v.(string)
	case "isError", "is_error":
		if b, _ := v.(bool); b {
			r.flagged = true
		}
	case "success":
		if ok, isBool := v.(bool); isBool && !ok {
			r.flagged = true
		}
	case "status_code", "statusCode", "http_status":
		if n, ok := asInt(v); ok && n >= 400 {
			r.flagged = true
		}
	case "error":
		r.err = v
	case "output":
		r.output, _ = v.(map[string]any)
	}
}

// failure reports whether the map says the call failed: status "error", a flag or
// code that says so, or an error beside a status that is not a success (a tool may
// report a harmless warning there alongside a good result).
func (r resultKeys) failure() bool {
	status := strings.ToLower(strings.TrimSpace(r.status))
	return status == "error" || r.flagged || (nonEmpty(r.err) && !successStatuses[status])
}

// codeKeys hold numeric HTTP statuses, most explicit first.
var codeKeys = []string{"status_code", "statusCode", "http_status", "status", "code"}

// failureFromCode applies the HTTP rules to the first failing HTTP status
// found. Numbers that are not 4xx/5xx (gRPC codes, vendor error numbers,
// a stray 200) are skipped rather than trusted.
func failureFromCode(sources []map[string]any) (Classification, bool) {
	for _, m := range sources {
		for _, k := range codeKeys {
			if s, isString := m[k].(string); isString && !allDigits(strings.TrimSpace(s)) {
				continue // words such as "NOT_FOUND" are handled by failureFromWords
			}
			n, ok := asInt(m[k])
			if ok && n >= 400 && n < 600 {
				return HTTPStatus(int(n), nil, time.Time{}), true
			}
		}
	}
	return Classification{}, false
}

// wordKeys hold machine-readable failure names.
var wordKeys = []string{"error_class", "error_type", "reason", "code", "status", "error"}

// failureWords maps normalised failure names, in the spellings tools and
// Google APIs commonly use, to classes. Names of the Class constants are
// accepted as well.
var failureWords = map[string]Classification{
	"not_found": ForClass(ClassNotFound),
	"notfound":  ForClass(ClassNotFound),

	"validation":          ForClass(ClassValidation),
	"validation_error":    ForClass(ClassValidation),
	"validation_failed":   ForClass(ClassValidation),
	"invalid_argument":    ForClass(ClassValidation),
	"invalid_arguments":   ForClass(ClassValidation),
	"invalid_input":       ForClass(ClassValidation),
	"invalid_params":      ForClass(ClassValidation),
	"invalid_request":     ForClass(ClassValidation),
	"bad_request":         ForClass(ClassValidation),
	"failed_precondition": ForClass(ClassValidation),
	"out_of_range":        ForClass(ClassValidation),

	"timeout":           ForClass(ClassTimeout),
	"timed_out":         ForClass(ClassTimeout),
	"deadline_exceeded": ForClass(ClassTimeout),
	"gateway_timeout":   ForClass(ClassTimeout),

	"unavailable":           of(ClassHTTP5xx, Failed),
	"service_unavailable":   of(ClassHTTP5xx, Failed),
	"internal":              ForClass(ClassHTTP5xx),
	"internal_error":        ForClass(ClassHTTP5xx),
	"server_error":          ForClass(ClassHTTP5xx),
	"internal_server_error": ForClass(ClassHTTP5xx),
	"bad_gateway":           ForClass(ClassHTTP5xx),

	"rate_limited":        ForClass(ClassHTTP429),
	"rate_limit":          ForClass(ClassHTTP429),
	"rate_limit_exceeded": ForClass(ClassHTTP429),
	"resource_exhausted":  ForClass(ClassHTTP429),
	"too_many_requests":   ForClass(ClassHTTP429),
	"quota_exceeded":      ForClass(ClassHTTP429),
	"throttled":           ForClass(ClassHTTP429),

	"unauthorized":      ForClass(ClassAuth),
	"unauthenticated":   ForClass(ClassAuth),
	"forbidden":         ForClass(ClassAuth),
	"permission_denied": ForClass(ClassAuth),
	"access_denied":     ForClass(ClassAuth),

	"no_results":          ForClass(ClassEmptyResult),
	"no_result":           ForClass(ClassEmptyResult),
	"empty":               ForClass(ClassEmptyResult),
	"no_matching_records": ForClass(ClassEmptyResult),
	"no_matches":          ForClass(ClassEmptyResult),
	"no_data":             ForClass(ClassEmptyResult),

	"safety":             ForClass(ClassSafetyBlock),
	"blocked":            ForClass(ClassSafetyBlock),
	"content_filtered":   ForClass(ClassSafetyBlock),
	"prohibited_content": ForClass(ClassSafetyBlock),
}

// wordReplacer folds the separators tools use into underscores, so
// "Not Found", "not-found" and "NOT_FOUND" all match.
var wordReplacer = strings.NewReplacer("-", "_", " ", "_", ".", "_")

func failureFromWords(sources []map[string]any) (Classification, bool) {
	for _, m := range sources {
		for _, k := range wordKeys {
			s, ok := m[k].(string)
			if !ok || len(s) > 64 {
				continue // free text, not a name
			}
			w := wordReplacer.Replace(strings.ToLower(strings.TrimSpace(s)))
			if c, ok := failureWords[w]; ok {
				return c, true
			}
			if cls := Class(w); cls.Known() && cls != ClassNone && cls != ClassUnclassified {
				return ForClass(cls), true
			}
		}
	}
	return Classification{}, false
}

// inBandRetryAfter reads a delay the tool passed on from its dependency.
func inBandRetryAfter(sources []map[string]any) (time.Duration, bool) {
	for _, m := range sources {
		for _, k := range []string{"retry_after_seconds", "retry_after", "retryAfter"} {
			if d, ok := asSeconds(m[k]); ok {
				return d, true
			}
		}
		if list, ok := m["details"].([]any); ok {
			details := make([]map[string]any, 0, len(list))
			for _, v := range list {
				if d, ok := v.(map[string]any); ok {
					details = append(details, d)
				}
			}
			if d, ok := RetryInfoDelay(details); ok {
				return d, true
			}
		}
	}
	return 0, false
}
