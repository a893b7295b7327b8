package classify_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	retry := func(v string) http.Header { return http.Header{"Retry-After": []string{v}} }
	tests := []struct {
		name      string
		code      int
		header    http.Header
		wantClass classify.Class
		wantOut   classify.Outcome
		wantRetry time.Duration
	}{
		{name: "200", code: 200, wantClass: classify.ClassNone, wantOut: classify.Succeeded},
		{name: "204", code: 204, wantClass: classify.ClassNone, wantOut: classify.Succeeded},
		{name: "101 switching protocols", code: 101, wantClass: classify.ClassNone, wantOut: classify.Succeeded},
		{name: "304 ignores retry-after", code: 304, header: retry("5"), wantClass: classify.ClassNone, wantOut: classify.Succeeded},
		{name: "400", code: 400, wantClass: classify.ClassValidation, wantOut: classify.Failed},
		{name: "401", code: 401, wantClass: classify.ClassAuth, wantOut: classify.Failed},
		{name: "403", code: 403, wantClass: classify.ClassAuth, wantOut: classify.Failed},
		{name: "404", code: 404, wantClass: classify.ClassNotFound, wantOut: classify.Failed},
		{name: "407", code: 407, wantClass: classify.ClassAuth, wantOut: classify.Failed},
		{name: "408", code: 408, wantClass: classify.ClassHTTP408, wantOut: classify.Failed},
		{name: "409", code: 409, wantClass: classify.ClassHTTP4xx, wantOut: classify.Failed},
		{name: "410", code: 410, wantClass: classify.ClassNotFound, wantOut: classify.Failed},
		{name: "418", code: 418, wantClass: classify.ClassHTTP4xx, wantOut: classify.Failed},
		{name: "422", code: 422, wantClass: classify.ClassValidation, wantOut: classify.Failed},
		{name: "429 with seconds", code: 429, header: retry("30"), wantClass: classify.ClassHTTP429, wantOut: classify.Failed, wantRetry: 30 * time.Second},
		{name: "429 without header", code: 429, wantClass: classify.ClassHTTP429, wantOut: classify.Failed},
		{name: "429 with garbage header", code: 429, header: retry("soon"), wantClass: classify.ClassHTTP429, wantOut: classify.Failed},
		{name: "500", code: 500, wantClass: classify.ClassHTTP5xx, wantOut: classify.Unknown},
		{name: "501", code: 501, wantClass: classify.ClassHTTP5xx, wantOut: classify.Unknown},
		{name: "502", code: 502, wantClass: classify.ClassHTTP5xx, wantOut: classify.Unknown},
		{name: "503 with date", code: 503, header: retry("Sun, 01 Mar 2026 12:02:00 GMT"), wantClass: classify.ClassHTTP5xx, wantOut: classify.Failed, wantRetry: 2 * time.Minute},
		{name: "504", code: 504, wantClass: classify.ClassHTTP5xx, wantOut: classify.Unknown},
		{name: "599", code: 599, wantClass: classify.ClassHTTP5xx, wantOut: classify.Unknown},
		{name: "0 is no status", code: 0, wantClass: classify.ClassUnclassified, wantOut: classify.Unknown},
		{name: "99", code: 99, wantClass: classify.ClassUnclassified, wantOut: classify.Unknown},
		{name: "600", code: 600, wantClass: classify.ClassUnclassified, wantOut: classify.Unknown},
		{name: "negative", code: -1, wantClass: classify.ClassUnclassified, wantOut: classify.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify.HTTPStatus(tt.code, tt.header, now)
			requireValid(t, got)
			require.Equal(t, tt.wantClass, got.Class)
			require.Equal(t, tt.wantOut, got.Outcome)
			require.Equal(t, tt.wantRetry, got.RetryAfter)
			require.Equal(t, tt.code, got.StatusCode)

			// The verdict and retry advice follow from the class.
			d := classify.ForClass(tt.wantClass)
			require.Equal(t, d.Verdict, got.Verdict)
			require.Equal(t, d.Retryable, got.Retryable)
			require.Equal(t, d.ConfigFault, got.ConfigFault)
		})
	}
}

// The rule of thumb from the design: capacity signals count, answers that
// prove the dependency is up do not.
func TestHTTPStatusCounting(t *testing.T) {
	t.Parallel()
	for code := 100; code < 600; code++ {
		got := classify.HTTPStatus(code, nil, time.Time{})
		wantCounts := code == 408 || code == 429 || code >= 500
		require.Equal(t, wantCounts, got.CountsAsFailure(), "status %d", code)
		require.Equal(t, wantCounts, got.Retryable, "status %d", code)
	}
}
