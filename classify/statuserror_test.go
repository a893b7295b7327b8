package classify_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

// stainlessError has the shape of openai-go's *openai.Error (apierror.Error):
// the body's fields, then StatusCode, Request and Response.
type stainlessError struct {
	Code, Message, Param, Type string
	StatusCode                 int
	Request                    *http.Request
	Response                   *http.Response
}

func (e *stainlessError) Error() string { return "POST /responses: " + e.Message }

// statusErr implements classify.HTTPStatusError, as a user's own client error would.
type statusErr struct {
	code int
	h    http.Header
}

func (e statusErr) Error() string           { return "provider said no" }
func (e statusErr) HTTPStatusCode() int     { return e.code }
func (e statusErr) HTTPHeader() http.Header { return e.h }

func stainless(code int, h http.Header) error {
	return fmt.Errorf("openai: call failed: %w", &stainlessError{
		Message: "secret words from the provider", StatusCode: code,
		Response: &http.Response{StatusCode: code, Header: h},
	})
}

func TestProviderErrorsClassifyByTheirStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		err         error
		wantClass   classify.Class
		wantVerdict classify.Verdict
		wantStatus  int
		wantAfter   time.Duration
	}{
		{"openai 400 is the request's fault", stainless(400, nil), classify.ClassValidation, classify.Healthy, 400, 0},
		{"openai 401 is the key's fault", stainless(401, nil), classify.ClassAuth, classify.Healthy, 401, 0},
		{"openai 503 counts", stainless(503, nil), classify.ClassHTTP5xx, classify.Counts, 503, 0},
		{"openai 429 with Retry-After", stainless(429, http.Header{"Retry-After": {"40"}}), classify.ClassHTTP429, classify.Counts, 429, 40 * time.Second},
		{"Retry-After-Ms wins", stainless(429, http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"40"}}), classify.ClassHTTP429, classify.Counts, 429, 1500 * time.Millisecond},
		{"408 counts", stainless(408, nil), classify.ClassHTTP408, classify.Counts, 408, 0},
		{"HTTPStatusError 500", fmt.Errorf("wrapped: %w", statusErr{code: 500}), classify.ClassHTTP5xx, classify.Counts, 500, 0},
		{"HTTPStatusError 429 with header", statusErr{code: 429, h: http.Header{"Retry-After": {"7"}}}, classify.ClassHTTP429, classify.Counts, 429, 7 * time.Second},
		{"joined errors", fmt.Errorf("x: %w", errorsJoin(fmt.Errorf("plain"), stainless(401, nil))), classify.ClassAuth, classify.Healthy, 401, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := classify.Classify(classify.Input{Err: tt.err, Now: now})
			require.Equal(t, tt.wantClass, c.Class)
			require.Equal(t, tt.wantVerdict, c.Verdict)
			require.Equal(t, tt.wantStatus, c.StatusCode)
			require.Equal(t, tt.wantAfter, c.RetryAfter)
		})
	}
}

func TestAStatuslessErrorStaysUnclassified(t *testing.T) {
	c := classify.Classify(classify.Input{Err: &stainlessError{Message: "no status"}})
	require.Equal(t, classify.ClassUnclassified, c.Class)
	var nilErr *stainlessError
	c = classify.Classify(classify.Input{Err: fmt.Errorf("w: %w", nilErr)})
	require.Equal(t, classify.ClassUnclassified, c.Class)
}

func errorsJoin(errs ...error) error { return joined(errs) }

type joined []error

func (j joined) Error() string   { return "joined" }
func (j joined) Unwrap() []error { return j }
