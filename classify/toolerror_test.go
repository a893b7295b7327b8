package classify_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

func TestToolErrorConstructors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		err      error
		want     classify.Classification
		wantText string
	}{
		{"not found", classify.NotFound("no customer with that ID"), classify.ForClass(classify.ClassNotFound), "no customer with that ID"},
		{"invalid input", classify.InvalidInput(""), classify.ForClass(classify.ClassValidation), "validation"},
		{"status 404", classify.StatusError(404, 0, ""), with(classify.ClassNotFound, func(c *classify.Classification) { c.StatusCode = 404 }), "HTTP 404 Not Found"},
		{"status 429 with delay", classify.StatusError(429, 7*time.Second, "slow down"),
			with(classify.ClassHTTP429, func(c *classify.Classification) { c.StatusCode, c.RetryAfter = 429, 7*time.Second }), "slow down"},
		{"status 503", classify.StatusError(503, 0, ""), with(classify.ClassHTTP5xx, func(c *classify.Classification) { c.Outcome, c.StatusCode = classify.Failed, 503 }), "HTTP 503 Service Unavailable"},
		{"upstream failure", classify.UpstreamFailure(time.Second, "the CRM could not answer"),
			with(classify.ClassHTTP5xx, func(c *classify.Classification) { c.RetryAfter = time.Second }), "the CRM could not answer"},
		{"wrapped", fmt.Errorf("lookup 42: %w", classify.NotFound("gone")), classify.ForClass(classify.ClassNotFound), "lookup 42: gone"},
		{"joined", errors.Join(errors.New("other"), classify.InvalidInput("bad date")), classify.ForClass(classify.ClassValidation), "other\nbad date"},
		{"by hand, empty", &classify.ToolError{}, classify.ForClass(classify.ClassUnclassified), "unclassified"},
		{"by hand, unknown class", &classify.ToolError{Classification: classify.Classification{Class: "made_up"}}, classify.ForClass(classify.ClassUnclassified), "unclassified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify.Error(context.Background(), tt.err)
			require.Equal(t, tt.want, got)
			requireValid(t, got)
			require.Equal(t, tt.wantText, tt.err.Error())
		})
	}
}

// The README's "a 404 does not count" holds for the forms the package documents and
// not for error text: these are the forms a tool author might try.
func TestWhich404FormsAreRecognised(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     classify.Input
		counts bool
	}{
		{"typed error", classify.Input{Err: classify.StatusError(404, 0, "")}, false},
		{"status code of the response", classify.Input{StatusCode: 404}, false},
		{"in-band status_code", classify.Input{Result: map[string]any{"status": "error", "status_code": 404}}, false},
		{"in-band word", classify.Input{Result: map[string]any{"error": "Not Found"}}, false},
		{"in-band error_class", classify.Input{Result: map[string]any{"error": "customer 42 is unknown", "error_class": "not_found"}}, false},
		{"Go error text is not parsed", classify.Input{Err: errors.New("HTTP 404")}, true},
		{"in-band sentence is an answer", classify.Input{Result: map[string]any{"error": "customer not found"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.counts, classify.Classify(tt.in).CountsAsFailure())
		})
	}
}

func TestToolErrorYieldsToTheCallersContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := classify.Error(ctx, classify.UpstreamFailure(0, "x"))
	require.Equal(t, classify.Neutral, got.Verdict)
	require.Equal(t, classify.ClassCanceled, got.Class)
}
