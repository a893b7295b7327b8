package classify_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

func TestToolResult(t *testing.T) {
	t.Parallel()
	none := classify.ForClass(classify.ClassNone)
	refused := classify.ForClass(classify.ClassRefused)
	code := func(class classify.Class, status int) classify.Classification {
		return with(class, func(c *classify.Classification) {
			c.StatusCode = status
			if status == 503 {
				c.Outcome = classify.Failed
			}
		})
	}
	delay := func(c classify.Classification, d time.Duration) classify.Classification {
		c.RetryAfter = d
		return c
	}
	unavailable := with(classify.ClassHTTP5xx, func(c *classify.Classification) { c.Outcome = classify.Failed })
	tests := []struct {
		name   string
		result map[string]any
		want   classify.Classification
	}{
		// No failure reported.
		{name: "nil", result: nil, want: none},
		{name: "empty map", result: map[string]any{}, want: none},
		{name: "empty results", result: map[string]any{"results": []any{}}, want: none},
		{name: "plain data", result: map[string]any{"temperature": 21.5, "unit": "C"}, want: none},
		{name: "success with warning", result: map[string]any{"status": "success", "error": "stale cache"}, want: none},
		{name: "ok status with error object", result: map[string]any{"status": "OK", "error": map[string]any{"code": 500}}, want: none},
		{name: "empty error string", result: map[string]any{"error": " "}, want: none},
		{name: "null error", result: map[string]any{"error": nil}, want: none},
		{name: "false error", result: map[string]any{"error": false}, want: none},
		{name: "empty error list", result: map[string]any{"error": []any{}}, want: none},
		{name: "isError false", result: map[string]any{"isError": false, "content": []any{}}, want: none},
		{name: "isError as string is not trusted", result: map[string]any{"isError": "true"}, want: none},
		{name: "success http status", result: map[string]any{"status_code": 200, "body": "hi"}, want: none},
		{name: "unrelated status word", result: map[string]any{"status": "pending"}, want: none},

		// Failure reported, nothing more known.
		{name: "status error", result: map[string]any{"status": "error"}, want: refused},
		{name: "status Error mixed case", result: map[string]any{"status": " Error ", "message": "the API said no"}, want: refused},
		{name: "mcp isError", result: map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "boom"}}}, want: refused},
		{name: "snake is_error", result: map[string]any{"is_error": true}, want: refused},
		{name: "error string", result: map[string]any{"error": "upstream exploded"}, want: refused},
		{name: "error number", result: map[string]any{"error": 3}, want: refused},
		{name: "error list", result: map[string]any{"error": []any{"x"}}, want: refused},
		{name: "long free text is not a word", result: map[string]any{"status": "error", "reason": "The record you asked for was not found in the database, please try another id"}, want: refused},
		{name: "grpc numeric code is not http", result: map[string]any{"status": "error", "code": 14}, want: refused},
		{name: "infinite code", result: map[string]any{"error": map[string]any{"code": math.Inf(1)}}, want: refused},

		// Refined by a numeric HTTP status.
		{name: "status_code int", result: map[string]any{"status": "error", "status_code": 404}, want: code(classify.ClassNotFound, 404)},
		{name: "statusCode float", result: map[string]any{"statusCode": float64(503)}, want: code(classify.ClassHTTP5xx, 503)},
		{name: "http_status json.Number", result: map[string]any{"http_status": json.Number("500")}, want: code(classify.ClassHTTP5xx, 500)},
		{name: "code as digits", result: map[string]any{"status": "error", "code": "429"}, want: code(classify.ClassHTTP429, 429)},
		{name: "spring style body", result: map[string]any{"status": float64(404), "error": "Not Found", "path": "/x"}, want: code(classify.ClassNotFound, 404)},
		{name: "422", result: map[string]any{"isError": true, "code": 422}, want: code(classify.ClassValidation, 422)},
		{name: "401", result: map[string]any{"status_code": 401}, want: code(classify.ClassAuth, 401)},
		{name: "numeric wins over words", result: map[string]any{"status": "error", "status_code": 503, "reason": "not_found"}, want: code(classify.ClassHTTP5xx, 503)},
		{name: "429 with retry seconds", result: map[string]any{"statusCode": 429, "retry_after_seconds": 12}, want: delay(code(classify.ClassHTTP429, 429), 12*time.Second)},

		// Refined by a word.
		{name: "NOT_FOUND", result: map[string]any{"status": "error", "error_type": "NOT_FOUND"}, want: classify.ForClass(classify.ClassNotFound)},
		{name: "not found with space", result: map[string]any{"status": "error", "reason": "Not Found"}, want: classify.ForClass(classify.ClassNotFound)},
		{name: "validation", result: map[string]any{"status": "error", "error_class": "validation"}, want: classify.ForClass(classify.ClassValidation)},
		{name: "invalid_argument", result: map[string]any{"status": "error", "code": "INVALID_ARGUMENT"}, want: classify.ForClass(classify.ClassValidation)},
		{name: "bad-request", result: map[string]any{"isError": true, "reason": "bad-request"}, want: classify.ForClass(classify.ClassValidation)},
		{name: "timeout", result: map[string]any{"status": "error", "error_type": "timeout"}, want: classify.ForClass(classify.ClassTimeout)},
		{name: "DEADLINE_EXCEEDED", result: map[string]any{"status": "error", "code": "DEADLINE_EXCEEDED"}, want: classify.ForClass(classify.ClassTimeout)},
		{name: "unavailable", result: map[string]any{"status": "error", "reason": "unavailable"}, want: unavailable},
		{name: "UNAVAILABLE", result: map[string]any{"status": "error", "code": "UNAVAILABLE"}, want: unavailable},
		{name: "rate_limited", result: map[string]any{"status": "error", "error_class": "rate_limited", "retry_after": 2.5}, want: delay(classify.ForClass(classify.ClassHTTP429), 2500*time.Millisecond)},
		{name: "RESOURCE_EXHAUSTED", result: map[string]any{"status": "error", "reason": "RESOURCE_EXHAUSTED"}, want: classify.ForClass(classify.ClassHTTP429)},
		{name: "too_many_requests", result: map[string]any{"error": "too_many_requests", "retry_after": "15"}, want: delay(classify.ForClass(classify.ClassHTTP429), 15*time.Second)},
		{name: "unauthorized", result: map[string]any{"status": "error", "error_type": "unauthorized"}, want: classify.ForClass(classify.ClassAuth)},
		{name: "forbidden", result: map[string]any{"status": "error", "reason": "forbidden"}, want: classify.ForClass(classify.ClassAuth)},
		{name: "permission_denied", result: map[string]any{"status": "error", "code": "PERMISSION_DENIED"}, want: classify.ForClass(classify.ClassAuth)},
		{name: "no_results", result: map[string]any{"status": "error", "reason": "no_results", "results": []any{}}, want: classify.ForClass(classify.ClassEmptyResult)},
		{name: "empty", result: map[string]any{"status": "error", "error_type": "empty"}, want: classify.ForClass(classify.ClassEmptyResult)},
		{name: "no matching records as error", result: map[string]any{"error": "No matching records"}, want: classify.ForClass(classify.ClassEmptyResult)},
		{name: "safety", result: map[string]any{"status": "error", "reason": "SAFETY"}, want: classify.ForClass(classify.ClassSafetyBlock)},
		{name: "class name", result: map[string]any{"status": "error", "error_class": "connection_refused"}, want: classify.ForClass(classify.ClassConnectionRefused)},
		{name: "class none is not a failure word", result: map[string]any{"status": "error", "error_class": "none"}, want: refused},

		// A Google-style error object nested under "error".
		{name: "nested google error", result: map[string]any{"error": map[string]any{
			"code": float64(429), "message": "quota", "status": "RESOURCE_EXHAUSTED",
			"details": []any{
				"not a map",
				map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"},
			},
		}}, want: delay(code(classify.ClassHTTP429, 429), 30*time.Second)},
		{name: "nested status word", result: map[string]any{"error": map[string]any{"status": "NOT_FOUND"}}, want: classify.ForClass(classify.ClassNotFound)},
		{name: "nested retry after", result: map[string]any{"error": map[string]any{"reason": "throttled", "retry_after_seconds": 4}}, want: delay(classify.ForClass(classify.ClassHTTP429), 4*time.Second)},

		// Retry delays that are not delays.
		{name: "negative retry after", result: map[string]any{"status": "error", "retry_after_seconds": -3}, want: refused},
		{name: "NaN retry after", result: map[string]any{"status": "error", "retry_after": math.NaN()}, want: refused},
		{name: "huge retry after", result: map[string]any{"status": "error", "retry_after": 1e300}, want: refused},
		{name: "retry after text", result: map[string]any{"status": "error", "retry_after": "later"}, want: refused},

		// This library's own payloads.
		{name: "own payload bulkhead", result: map[string]any{
			"response_type": "agentbreaker.unavailable", "status": "unavailable", "error_class": "bulkhead_full", "retry_after_seconds": 30,
		}, want: delay(classify.ForClass(classify.ClassBulkheadFull), 30*time.Second)},
		{name: "own payload without class", result: map[string]any{"response_type": "agentbreaker.unavailable"}, want: classify.ForClass(classify.ClassBreakerOpen)},
		{name: "own payload with unknown class", result: map[string]any{"response_type": "agentbreaker.x", "error_class": "server on fire"}, want: classify.ForClass(classify.ClassBreakerOpen)},
		{name: "own payload class of wrong type", result: map[string]any{"response_type": "agentbreaker.x", "error_class": 5}, want: classify.ForClass(classify.ClassBreakerOpen)},
		{name: "own payload claiming no failure", result: map[string]any{"response_type": "agentbreaker.x", "error_class": "none"}, want: classify.ForClass(classify.ClassBreakerOpen)},
		{name: "someone else's payload", result: map[string]any{"response_type": "other.unavailable", "status": "error"}, want: refused},
		{name: "prefix must lead", result: map[string]any{"response_type": "x.agentbreaker.y"}, want: none},

		// Odd shapes.
		{name: "status of wrong type", result: map[string]any{"status": []any{"error"}}, want: none},
		{name: "nil values", result: map[string]any{"status": nil, "isError": nil, "status_code": nil, "error": nil}, want: none},
		{name: "deep nesting", result: map[string]any{"error": map[string]any{"error": map[string]any{"error": map[string]any{}}}}, want: refused},
		{name: "huge status code", result: map[string]any{"status_code": 1e30, "error": "x"}, want: refused},
		{name: "unsigned status code", result: map[string]any{"status_code": uint64(math.MaxUint64), "error": "x"}, want: refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify.ToolResult(tt.result)
			require.Equal(t, tt.want, got)
			requireValid(t, got)
			require.Equal(t, got, classify.Classify(classify.Input{Result: tt.result}))
		})
	}
}

func FuzzToolResult(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `{"results": []}`, `{"status": "error"}`, `{"status": "ERROR", "code": 404}`,
		`{"isError": true, "content": [{"type": "text", "text": "x"}]}`,
		`{"error": "no_results"}`, `{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]}}`,
		`{"status": "error", "status_code": 503, "retry_after_seconds": 1e308}`,
		`{"status": "error", "retry_after": -1}`, `{"statusCode": 4e2, "retry_after": "12"}`,
		`{"response_type": "agentbreaker.unavailable", "error_class": "bulkhead_full"}`,
		`{"response_type": "agentbreaker.unavailable", "error_class": "none"}`,
		`{"status": "success", "error": "warn"}`, `{"status": 404, "error": "Not Found"}`,
		`{"http_status": 99999999999999999999999}`, `{"code": "DEADLINE_EXCEEDED", "isError": true}`,
		`{"error": {"details": [{"@type": "google.rpc.RetryInfo", "retryDelay": {"seconds": "9223372036", "nanos": 999999999}}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var plain map[string]any
		if json.Unmarshal(data, &plain) == nil {
			checkToolResult(t, plain)
		}
		var numbers map[string]any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if dec.Decode(&numbers) == nil {
			checkToolResult(t, numbers)
		}
	})
}

func checkToolResult(t *testing.T, m map[string]any) {
	t.Helper()
	got := classify.ToolResult(m)
	requireValid(t, got)
	require.Equal(t, got, classify.ToolResult(m), "deterministic")
	require.Equal(t, got, classify.Classify(classify.Input{Result: m}))
	if got.StatusCode != 0 {
		require.True(t, got.StatusCode >= 400 && got.StatusCode < 600, "status %d", got.StatusCode)
	}
}

// Tools built in Go put any integer type in their maps; JSON decoding gives
// float64 or json.Number. All of them mean the same status.
func TestToolResultNumberForms(t *testing.T) {
	t.Parallel()
	forms := []any{
		int(404), int8(-1), int16(404), int32(404), int64(404),
		uint(404), uint8(200), uint16(404), uint32(404), uint64(404),
		float32(404), float64(404), json.Number("404"), json.Number("404.0"), " 404 ",
	}
	for _, v := range forms {
		got := classify.ToolResult(map[string]any{"status": "error", "status_code": v})
		requireValid(t, got)
		switch v {
		case int8(-1), uint8(200):
			require.Equal(t, classify.ClassRefused, got.Class, "%T %v is not a failing status", v, v)
		default:
			require.Equal(t, classify.ClassNotFound, got.Class, "%T %v", v, v)
			require.Equal(t, 404, got.StatusCode)
		}
	}
	for _, v := range []any{float64(404.5), json.Number("4e400"), json.Number("x"), true, "404 Not Found"} {
		got := classify.ToolResult(map[string]any{"status": "error", "status_code": v})
		require.Equal(t, classify.ClassRefused, got.Class, "%T %v", v, v)
	}
	for _, v := range []any{int64(3), uint16(3), float32(3), json.Number("3"), " 3 "} {
		got := classify.ToolResult(map[string]any{"status": "error", "retry_after_seconds": v})
		require.Equal(t, 3*time.Second, got.RetryAfter, "%T %v", v, v)
	}
	for _, v := range []any{json.Number("-1"), json.Number("nope"), uint64(math.MaxUint64), int64(math.MaxInt64)} {
		got := classify.ToolResult(map[string]any{"status": "error", "retry_after_seconds": v})
		require.Zero(t, got.RetryAfter, "%T %v", v, v)
	}
}
