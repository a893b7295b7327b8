package admin_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// TestLowEntropyTokensAreRefused: sixteen copies of one character were accepted
// (issue 15 j). A token must have enough distinct characters and estimated entropy,
// and the error names the field without showing the token.
func TestLowEntropyTokensAreRefused(t *testing.T) {
	t.Parallel()
	deps := dependencymap.MustNew(dependencymap.Config{})
	tests := []struct {
		name    string
		token   string
		wantErr string
	}{
		{name: "sixteen copies of one character", token: strings.Repeat("a", 16),
			wantErr: "admin: Token = <16 bytes, 1 distinct characters, about 0 bits>: is too easy to guess: it needs at least 8 distinct characters and 64 bits of estimated entropy"},
		{name: "a long run of one character", token: strings.Repeat("x", 64), wantErr: "1 distinct characters"},
		{name: "a short pattern repeated", token: strings.Repeat("abcd", 8), wantErr: "4 distinct characters"},
		{name: "eight characters twice", token: "abcdefghabcdefgh", wantErr: "8 distinct characters, about 48 bits"},
		{name: "a word and digits", token: "password12345678", wantErr: "is too easy to guess"},
		{name: "control characters", token: "0123456789abcde\x01", wantErr: "admin: Token = <redacted>: must be printable text"},
		{name: "sixteen distinct characters", token: "0123456789abcdef"},
		{name: "openssl rand -base64 32", token: "q3Vb8Zk1m9Rr2YtC0sLwXh5uPe7NfJ4aGdTiKoQvB6M="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := admin.New(admin.Config{Token: tt.token, Breakers: deps})
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			require.ErrorIs(t, err, admin.ErrConfig)
			require.NotContains(t, err.Error(), tt.token, "the token never appears in an error")
		})
	}
	_, err := admin.New(admin.Config{Token: token, Breakers: deps, Refresh: 100 * time.Millisecond})
	require.ErrorContains(t, err, "admin: Refresh = 100ms: must be between 1s and 10m")
}

// TestSecurityHeadersOnEveryResponse: HSTS and the usual headers on the page, the
// API, and on refusals and errors (issue 15 j: there was no HSTS).
func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, r := range []request{
		{method: http.MethodGet, path: "/"},
		{method: http.MethodGet, path: "/api/state"},
		{method: http.MethodGet, path: "/api/state", header: map[string]string{"Authorization": ""}},
		{method: http.MethodGet, path: "/api/nothing"},
		{method: http.MethodPost, path: "/api/state"},
		{method: http.MethodPost, path: "/api/breakers/crm/reset", header: map[string]string{"Content-Type": "text/plain"}},
	} {
		_, hdr, _ := f.do(t, r)
		for k, v := range map[string]string{
			"Strict-Transport-Security":    "max-age=63072000; includeSubDomains",
			"X-Content-Type-Options":       "nosniff",
			"X-Frame-Options":              "DENY",
			"Referrer-Policy":              "no-referrer",
			"Cache-Control":                "no-store",
			"Cross-Origin-Opener-Policy":   "same-origin",
			"Cross-Origin-Resource-Policy": "same-origin",
		} {
			require.Equal(t, v, hdr.Get(k), "%s %s: %s", r.method, r.path, k)
		}
		require.Contains(t, hdr.Get("Content-Security-Policy"), "frame-ancestors 'none'", "%s %s", r.method, r.path)
		require.Contains(t, hdr.Get("Permissions-Policy"), "camera=()", "%s %s", r.method, r.path)
	}
}
