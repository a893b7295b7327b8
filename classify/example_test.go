package classify_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/classify"
)

// A model call failed with a quota error that the SDK wrapped. The
// classification says it counts toward tripping the model's breaker, that
// nothing was applied, and how long Gemini asked us to wait.
func Example() {
	err := fmt.Errorf("failed to call model: %w", genai.APIError{
		Code:   429,
		Status: "RESOURCE_EXHAUSTED",
		Details: []map[string]any{{
			"@type":      "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": "40s",
		}},
	})
	c := classify.Error(context.Background(), err)
	fmt.Println(c.Outcome, c.Class, c.Verdict, c.Retryable, c.RetryAfter)
	// Output: FAILED http_429 counts true 40s
}

// A 404 proves the dependency is up, even though the call failed; a 503
// with Retry-After is a capacity signal that counts.
func ExampleHTTPStatus() {
	notFound := classify.HTTPStatus(http.StatusNotFound, nil, time.Time{})
	fmt.Println(notFound.Class, notFound.Verdict, notFound.CountsAsFailure())

	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := http.Header{"Retry-After": []string{"Sun, 01 Mar 2026 12:00:30 GMT"}}
	busy := classify.HTTPStatus(http.StatusServiceUnavailable, h, now)
	fmt.Println(busy.Class, busy.Verdict, busy.CountsAsFailure(), busy.RetryAfter)
	// Output:
	// not_found healthy false
	// http_5xx counts true 30s
}

// Tools often report failure inside their result instead of returning an
// error.
func ExampleToolResult() {
	for _, result := range []map[string]any{
		{"results": []any{}},
		{"status": "error", "error_type": "NOT_FOUND", "message": "no order 42"},
		{"status": "error", "status_code": 503, "retry_after_seconds": 20},
		{"isError": true, "content": []any{map[string]any{"type": "text", "text": "card_declined: the card was declined"}}},
		{"isError": true, "content": []any{map[string]any{"type": "text", "text": "upstream said HTTP 502"}}},
		{"success": false, "error": "card_declined", "message": "The card was declined."},
		{"output": map[string]any{"status_code": 429, "message": "slow down"}},
	} {
		c := classify.ToolResult(result)
		fmt.Println(c.Outcome, c.Class, c.Verdict, c.RetryAfter)
	}
	// Output:
	// SUCCEEDED none healthy 0s
	// FAILED not_found healthy 0s
	// FAILED http_5xx counts 20s
	// FAILED refused healthy 0s
	// FAILED http_5xx counts 0s
	// FAILED refused healthy 0s
	// FAILED http_429 counts 0s
}

// When the caller gives up, the failure says nothing about the dependency.
func ExampleError_callerCancelled() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the user closed the session mid-call

	c := classify.Error(ctx, fmt.Errorf("search: %w", context.Canceled))
	fmt.Println(c.Outcome, c.Class, c.Verdict)
	// Output: UNKNOWN canceled neutral
}

// errOutOfStock is a business answer from an inventory tool.
var errOutOfStock = errors.New("inventory: out of stock")

// A dependency with a quirk: this inventory API answers 409 when it is
// overloaded, and its client returns a sentinel for a business answer that
// must not count against it.
func ExampleNew() {
	c, err := classify.New(classify.Config{Rules: []classify.Rule{
		classify.MatchError(errOutOfStock, classify.ForClass(classify.ClassEmptyResult)),
		classify.MatchStatus(http.StatusConflict, classify.ForClass(classify.ClassHTTP5xx)),
	}})
	if err != nil {
		panic(err)
	}
	a := c.Classify(classify.Input{Err: fmt.Errorf("reserve: %w", errOutOfStock)})
	b := c.Classify(classify.Input{StatusCode: http.StatusConflict})
	fmt.Println(a.Class, a.Verdict)
	fmt.Println(b.Class, b.Verdict, b.StatusCode)
	// Output:
	// empty_result healthy
	// http_5xx counts 409
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"120", "Sun, 01 Mar 2026 12:05:00 GMT", "Sat, 28 Feb 2026 00:00:00 GMT", "-1"} {
		d, ok := classify.ParseRetryAfter(v, now)
		fmt.Println(d, ok)
	}
	// Output:
	// 2m0s true
	// 5m0s true
	// 0s true
	// 0s false
}

func ExampleRetryInfoDelay() {
	d, ok := classify.RetryInfoDelay([]map[string]any{
		{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"},
	})
	fmt.Println(d, ok)
	// Output: 1.5s true
}

// A tool says what its dependency did with a typed error, wrapped as it likes; the
// classifier finds it and no error text is parsed.
func ExampleNotFound() {
	err := fmt.Errorf("get_customer: %w", classify.NotFound("no customer with that ID"))
	c := classify.Error(context.Background(), err)
	fmt.Println(c.Outcome, c.Class, c.Verdict)
	fmt.Println(err)

	c = classify.Error(context.Background(), errors.New("HTTP 404")) // text is not read
	fmt.Println(c.Outcome, c.Class, c.Verdict)
	// Output:
	// FAILED not_found healthy
	// get_customer: no customer with that ID
	// UNKNOWN unclassified counts
}
