package classify_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

// TestRequestConfigFromNetHTTP builds each misconfigured request as a tool would
// and sends it with a real http.Client: every one is refused by net/http before a
// connection, and classifies as request_config (FAILED_BEFORE_SEND, neutral,
// ConfigFault), with a cause that never quotes the URL.
func TestRequestConfigFromNetHTTP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		url       string
		method    string
		header    http.Header
		wantCause string
	}{
		{name: "empty base URL", url: "?city=Paris&key=s3cr3t", wantCause: "no scheme"},
		{name: "no scheme", url: "weather.example/v1?city=Paris", wantCause: "no scheme"},
		{name: "host without scheme", url: "localhost:8080/v1", wantCause: "scheme is not http"},
		{name: "unsupported scheme", url: "ftp://weather.example/v1", wantCause: "scheme is not http"},
		{name: "scheme without host", url: "http:///v1", wantCause: "no host"},
		{name: "does not parse", url: "http://[::1/v1?key=s3cr3t", wantCause: "does not parse"},
		{name: "control character", url: "http://weather.example/\x7f?key=s3cr3t", wantCause: "does not parse"},
		{name: "invalid method", url: "http://127.0.0.1:1/", method: "BAD METHOD", wantCause: "method is not valid"},
		{name: "invalid header", url: "http://127.0.0.1:1/", header: http.Header{"X-Key": {"a\nb"}}, wantCause: "header is not valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := send(t, tt.method, tt.url, tt.header)
			require.Error(t, err)
			got := classify.Error(context.Background(), err)
			require.Equal(t, classify.ClassRequestConfig, got.Class, "%v", err)
			require.Equal(t, classify.FailedBeforeSend, got.Outcome)
			require.Equal(t, classify.Neutral, got.Verdict)
			require.True(t, got.ConfigFault)
			require.False(t, got.Retryable)
			cause, ok := classify.RequestConfigCause(fmt.Errorf("get_weather: %w", err))
			require.True(t, ok, "found through wrapping")
			require.Contains(t, cause, tt.wantCause)
			require.NotContains(t, cause, "s3cr3t")
		})
	}
}

// send builds and sends a request as the Quick start's tool does; the error is
// NewRequest's or Do's.
func send(t *testing.T, method, target string, header http.Header) error {
	t.Helper()
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	req.Method = method // NewRequest's own check of the method returns no *url.Error
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("%s %q was sent", method, target)
	}
	return err
}

// TestRequestConfigNeedsTheURLError holds the rule to its structure: the same
// words without net/http's *url.Error around them (a tool that flattened the
// error, or a dependency's body quoted in one) are anyone's words and still count.
func TestRequestConfigNeedsTheURLError(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		errors.New("http: no Host in request URL"),
		fmt.Errorf("weather: %v", &url.Error{Op: "Get", URL: "?city=x", Err: errors.New("http: no Host in request URL")}),
		errors.New(`unsupported protocol scheme "ftp"`),
		// A url.Error around a dependency's text is not net/http's refusal.
		&url.Error{Op: "Get", URL: "http://x", Err: errors.New("upstream said: http: no Host in request URL")},
	} {
		_, ok := classify.RequestConfigCause(err)
		require.False(t, ok, "%v", err)
		got := classify.Error(context.Background(), err)
		require.Equal(t, classify.ClassUnclassified, got.Class, "%v", err)
		require.Equal(t, classify.Counts, got.Verdict)
	}
	_, ok := classify.RequestConfigCause(nil)
	require.False(t, ok)
}

// TestRequestConfigCauseIsFixedText checks every cause against the URL it came
// from: no part of the URL (host, path, query) is repeated.
func TestRequestConfigCauseIsFixedText(t *testing.T) {
	t.Parallel()
	const target = "gopher://user:pa55@weather.example/very-secret-path?key=s3cr3t"
	err := send(t, "", target, nil)
	cause, ok := classify.RequestConfigCause(err)
	require.True(t, ok, "%v", err)
	for _, part := range []string{"gopher", "pa55", "weather.example", "very-secret-path", "s3cr3t"} {
		require.False(t, strings.Contains(cause, part), "cause %q quotes %q", cause, part)
	}
}

// The Quick start's tool with WEATHER_API_URL never set sends "?city=Paris": net/http
// refuses it before any connection, and the error says so.
func ExampleRequestConfigCause() {
	_, err := http.Get("" + "?city=Paris")
	cause, ok := classify.RequestConfigCause(err)
	fmt.Println(ok, cause)
	c := classify.Error(context.Background(), err)
	fmt.Println(c.Class, c.Outcome, c.Verdict, c.ConfigFault)
	// Output:
	// true the request URL has no scheme (is its base URL set?)
	// request_config FAILED_BEFORE_SEND neutral true
}
