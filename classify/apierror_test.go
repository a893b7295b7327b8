package classify_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/classify"
)

func retryInfo(delay any) map[string]any {
	return map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
}

func TestAPIError(t *testing.T) {
	t.Parallel()
	quota := genai.APIError{
		Code:    429,
		Message: "You exceeded your current quota.",
		Status:  "RESOURCE_EXHAUSTED",
		Details: []map[string]any{
			{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{}},
			retryInfo("40s"),
		},
	}
	want429 := with(classify.ClassHTTP429, func(c *classify.Classification) {
		c.StatusCode = 429
		c.RetryAfter = 40 * time.Second
	})
	status := func(class classify.Class, code int) classify.Classification {
		return with(class, func(c *classify.Classification) { c.StatusCode = code })
	}
	unavailable := with(classify.ClassHTTP5xx, func(c *classify.Classification) {
		c.Outcome = classify.Failed
		c.StatusCode = 503
	})

	tests := []struct {
		name string
		err  error
		want classify.Classification
	}{
		{name: "quota with retry info", err: quota, want: want429},
		{name: "quota wrapped", err: fmt.Errorf("failed to call model: %w", quota), want: want429},
		{name: "quota as pointer, wrapped twice", err: fmt.Errorf("agent: %w", fmt.Errorf("model: %w", &quota)), want: want429},
		{name: "status name without code", err: genai.APIError{Status: "RESOURCE_EXHAUSTED"}, want: status(classify.ClassHTTP429, 429)},
		{name: "lower-case status name", err: genai.APIError{Code: 503, Status: " unavailable "}, want: unavailable},
		{name: "unavailable", err: genai.APIError{Code: 503, Status: "UNAVAILABLE", Message: "The model is overloaded."}, want: unavailable},
		{name: "unavailable with retry object", err: genai.APIError{Code: 503, Status: "UNAVAILABLE", Details: []map[string]any{
			retryInfo(map[string]any{"seconds": "3", "nanos": float64(500000000)}),
		}}, want: with(classify.ClassHTTP5xx, func(c *classify.Classification) {
			c.Outcome = classify.Failed
			c.StatusCode = 503
			c.RetryAfter = 3500 * time.Millisecond
		})},
		{name: "deadline exceeded", err: genai.APIError{Code: 504, Status: "DEADLINE_EXCEEDED"}, want: status(classify.ClassTimeout, 504)},
		{name: "bare 504", err: genai.APIError{Code: 504}, want: status(classify.ClassTimeout, 504)},
		{name: "invalid argument", err: genai.APIError{Code: 400, Status: "INVALID_ARGUMENT"}, want: status(classify.ClassInvalidArgument, 400)},
		{name: "failed precondition", err: genai.APIError{Code: 400, Status: "FAILED_PRECONDITION"}, want: status(classify.ClassInvalidArgument, 400)},
		{name: "permission denied", err: genai.APIError{Code: 403, Status: "PERMISSION_DENIED"}, want: status(classify.ClassAuth, 403)},
		{name: "unauthenticated", err: genai.APIError{Code: 401, Status: "UNAUTHENTICATED"}, want: status(classify.ClassAuth, 401)},
		{name: "not found", err: genai.APIError{Code: 404, Status: "NOT_FOUND"}, want: status(classify.ClassNotFound, 404)},
		{name: "internal", err: genai.APIError{Code: 500, Status: "INTERNAL"}, want: status(classify.ClassHTTP5xx, 500)},
		{name: "plain-text body keeps the status line", err: genai.APIError{Code: 503, Status: "503 Service Unavailable", Message: "overloaded"}, want: unavailable},
		{name: "plain-text 400", err: genai.APIError{Code: 400, Status: "400 Bad Request"}, want: status(classify.ClassValidation, 400)},
		{name: "plain-text 502", err: genai.APIError{Code: 502, Status: "502 Bad Gateway"}, want: status(classify.ClassHTTP5xx, 502)},
		{name: "unlisted status falls back to code", err: genai.APIError{Code: 409, Status: "ABORTED"}, want: status(classify.ClassHTTP4xx, 409)},
		{name: "empty error", err: genai.APIError{}, want: classify.ForClass(classify.ClassUnclassified)},
		{name: "error claiming success", err: genai.APIError{Code: 200}, want: status(classify.ClassUnclassified, 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify.Error(context.Background(), tt.err)
			require.Equal(t, tt.want, got)
			requireValid(t, got)
		})
	}
}

func TestAPIErrorCallerDone(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := classify.Error(ctx, fmt.Errorf("model: %w", genai.APIError{
		Code: 429, Status: "RESOURCE_EXHAUSTED", Details: []map[string]any{retryInfo("2s")},
	}))
	require.Equal(t, with(classify.ClassCanceled, func(c *classify.Classification) {
		c.Outcome = classify.Failed // the server's refusal is still a fact
		c.StatusCode = 429
		c.RetryAfter = 2 * time.Second
	}), got)
}

func TestAPIErrorHeaderDelay(t *testing.T) {
	t.Parallel()
	h := http.Header{"Retry-After": []string{"9"}}
	got := classify.Classify(classify.Input{Err: genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED"}, Header: h})
	require.Equal(t, 9*time.Second, got.RetryAfter, "header used when RetryInfo is absent")

	got = classify.Classify(classify.Input{
		Err:    genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Details: []map[string]any{retryInfo("1s")}},
		Header: h,
	})
	require.Equal(t, time.Second, got.RetryAfter, "RetryInfo wins over the header")
}
