package classify_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

// mcpIsError builds the error adk-go v2.2.0's mcptoolset returns for an isError result
// (tool/mcptoolset/tool.go): "Tool execution failed." and, when the result has text
// content, " Details: " and the text.
func mcpIsError(text string) error {
	if text == "" {
		return errors.New("Tool execution failed.")
	}
	return errors.New("Tool execution failed. Details: " + text)
}

func TestMCPIsErrorIsAnAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		text   string
		class  classify.Class
		counts bool
	}{
		{"business refusal", "card_declined: The card was declined.", classify.ClassRefused, false},
		{"prose refusal", "This order has already shipped and cannot be cancelled.", classify.ClassRefused, false},
		{"no text", "", classify.ClassRefused, false},
		{"argument mistake", "invalid argument: customer_id must be numeric", classify.ClassValidation, false},
		{"not found", "not found: no order 42", classify.ClassNotFound, false},
		{"amount is not a status", "charge of 500 EUR refused: insufficient funds", classify.ClassRefused, false},
		{"4xx status is an answer", "HTTP 409 conflict: order locked", classify.ClassRefused, false},
		{"prose unavailable is an answer", "the blue model is unavailable in your region", classify.ClassRefused, false},
		{"status after HTTP", "upstream answered HTTP 503", classify.ClassHTTP5xx, true},
		{"status with reason phrase", "<html>502 Bad Gateway</html>", classify.ClassHTTP5xx, true},
		{"status code field", "status code: 429, slow down", classify.ClassHTTP429, true},
		{"408", "status 408", classify.ClassHTTP408, true},
		{"gRPC name", "rpc error: code = UNAVAILABLE desc = connection refused", classify.ClassHTTP5xx, true},
		{"quota name", "RESOURCE_EXHAUSTED: quota for project", classify.ClassHTTP429, true},
		{"snake name", "payments said rate_limited", classify.ClassHTTP429, true},
		{"deadline name", "DEADLINE_EXCEEDED talking to ledger", classify.ClassHTTP408, true},
		{"errno name", "dial tcp 10.0.0.1:5432: connect: ECONNREFUSED", classify.ClassHTTP5xx, true},
		{"go stack trace", "panic: runtime error: index out of range\n\ngoroutine 1 [running]:\nmain.main()", classify.ClassHTTP5xx, true},
		{"python traceback", "Traceback (most recent call last):\n  File \"x.py\"", classify.ClassHTTP5xx, true},
		{"json refusal", `{"error": "card_declined", "message": "The card was declined."}`, classify.ClassRefused, false},
		{"json status", `{"status_code": 503, "message": "maintenance"}`, classify.ClassHTTP5xx, true},
		{"json word", `{"error": {"code": "RESOURCE_EXHAUSTED"}}`, classify.ClassHTTP429, true},
		{"broken json is text", `{"error": "card_declined"`, classify.ClassRefused, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify.Classify(classify.Input{Err: mcpIsError(tt.text)})
			requireValid(t, got)
			require.Equal(t, tt.class, got.Class)
			require.Equal(t, classify.Failed, got.Outcome, "the server answered: never UNKNOWN")
			require.Equal(t, tt.counts, got.CountsAsFailure())

			wrapped := classify.Classify(classify.Input{Err: fmt.Errorf("tool payments: %w", mcpIsError(tt.text))})
			require.Equal(t, got, wrapped, "wrapping with %%w changes nothing")
		})
	}
}

func TestMCPToolFailureRecognisesOnlyAdkGosError(t *testing.T) {
	t.Parallel()
	d, ok := classify.MCPToolFailure(mcpIsError("card_declined"))
	require.True(t, ok)
	require.Equal(t, "card_declined", d)
	_, ok = classify.MCPToolFailure(mcpIsError(""))
	require.True(t, ok)
	for _, err := range []error{
		errors.New("failed to call MCP tool \"charge\" with err: EOF"),
		errors.New("tool execution failed. details: lower case is someone else's"),
		errors.New("Details: Tool execution failed."),
	} {
		_, ok := classify.MCPToolFailure(err)
		require.False(t, ok, "%v", err)
	}
	got := classify.Classify(classify.Input{Err: errors.New("no text content in tool response")})
	require.Equal(t, classify.ClassEmptyResult, got.Class)
	require.False(t, got.CountsAsFailure())
}

func TestTextSignalIsBounded(t *testing.T) {
	t.Parallel()
	late := strings.Repeat("the card was declined ", 400) + "HTTP 503"
	_, ok := classify.TextSignal(late)
	require.False(t, ok, "a signal past the first 4 KiB is not read")
	c, ok := classify.TextSignal("HTTP 503 " + strings.Repeat("x", 1<<20))
	require.True(t, ok)
	require.Equal(t, 503, c.StatusCode)
}

func TestMatchTextTeachesAServersOwnWords(t *testing.T) {
	t.Parallel()
	cl := classify.MustNew(classify.Config{Rules: []classify.Rule{
		classify.MatchText(regexp.MustCompile(`(?i)processor unreachable`), classify.ForClass(classify.ClassHTTP5xx)),
		classify.MatchText(nil, classify.ForClass(classify.ClassHTTP5xx)),
	}})
	got := cl.Classify(classify.Input{Err: mcpIsError("Payment processor unreachable, try later")})
	require.Equal(t, classify.ClassHTTP5xx, got.Class)
	require.Equal(t, classify.Failed, got.Outcome, "an MCP server's answer stays Failed")
	require.True(t, got.CountsAsFailure())

	got = cl.Classify(classify.Input{Result: map[string]any{"status": "error", "message": "processor unreachable"}})
	require.Equal(t, classify.ClassHTTP5xx, got.Class)

	got = cl.Classify(classify.Input{Err: mcpIsError("card_declined")})
	require.Equal(t, classify.ClassRefused, got.Class, "other text falls through to the defaults")
	got = cl.Classify(classify.Input{Result: map[string]any{"note": "processor unreachable"}})
	require.Equal(t, classify.ClassNone, got.Class, "a success's text is not searched")
}

func TestStructuredContentUnderOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		result map[string]any
		class  classify.Class
	}{
		{"503 under output", map[string]any{"output": map[string]any{"status_code": 503, "detail": "down"}}, classify.ClassHTTP5xx},
		{"name under output", map[string]any{"output": map[string]any{"status": "error", "code": "UNAVAILABLE"}}, classify.ClassHTTP5xx},
		{"refusal under output", map[string]any{"output": map[string]any{"success": false, "error": "card_declined"}}, classify.ClassRefused},
		{"data under output", map[string]any{"output": map[string]any{"balance": 12}}, classify.ClassNone},
		{"text output", map[string]any{"output": "HTTP 503 is what the docs call it"}, classify.ClassNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.class, classify.ToolResult(tt.result).Class)
		})
	}
}
