package admin_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

func TestNewRefusesUnsafeConfig(t *testing.T) {
	t.Parallel()
	deps := dependencymap.MustNew(dependencymap.Config{})
	tests := []struct {
		name    string
		cfg     admin.Config
		wantErr string
	}{
		{name: "valid", cfg: admin.Config{Token: token, Breakers: deps}},
		{name: "no token", cfg: admin.Config{Breakers: deps}, wantErr: `admin: Token = "": is required: the admin endpoint has no default token`},
		{name: "short token", cfg: admin.Config{Token: "hunter2", Breakers: deps}, wantErr: "admin: Token = <7 bytes>: must be at least 16 bytes"},
		{name: "token with a space", cfg: admin.Config{Token: "0123456789 abcdef", Breakers: deps}, wantErr: "admin: Token = <redacted>: must not contain white space"},
		{name: "no breakers", cfg: admin.Config{Token: token}, wantErr: "admin: Breakers = nil: is required"},
		{name: "negative body cap", cfg: admin.Config{Token: token, Breakers: deps, MaxBodyBytes: -1}, wantErr: "admin: MaxBodyBytes = -1: must be positive"},
		{name: "bad trusted origin", cfg: admin.Config{Token: token, Breakers: deps, TrustedOrigins: []string{"ops.example.com/path"}}, wantErr: "admin: TrustedOrigins[0] = ops.example.com/path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := admin.New(tt.cfg)
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.NotNil(t, h)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			require.ErrorIs(t, err, admin.ErrConfig)
			require.NotContains(t, err.Error(), "hunter2", "the token never appears in an error")
			require.Panics(t, func() { admin.MustNew(tt.cfg) })
		})
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tests := []struct {
		name   string
		auth   string
		want   int
		reason string
	}{
		{name: "missing", auth: "", want: http.StatusUnauthorized},
		{name: "wrong", auth: "Bearer not-the-token-0123456789", want: http.StatusUnauthorized},
		{name: "prefix of the token", auth: "Bearer " + token[:20], want: http.StatusUnauthorized},
		{name: "token with extra", auth: "Bearer " + token + "x", want: http.StatusUnauthorized},
		{name: "wrong scheme", auth: "Basic " + token, want: http.StatusUnauthorized},
		{name: "scheme only", auth: "Bearer", want: http.StatusUnauthorized},
		{name: "correct", auth: "Bearer " + token, want: http.StatusOK},
		{name: "scheme is case-insensitive", auth: "bearer " + token, want: http.StatusOK},
	}
	t.Run("cases", func(t *testing.T) { // returns when the parallel cases are done
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				for _, r := range []request{
					{method: http.MethodGet, path: "/api/state"},
					{method: http.MethodGet, path: "/api/journal"},
					{method: http.MethodPost, path: "/api/breakers/crm/reset"},
				} {
					r.header = map[string]string{"Authorization": tt.auth}
					status, hdr, body := f.do(t, r)
					require.Equal(t, tt.want, status, "%s %s: %s", r.method, r.path, body)
					if tt.want == http.StatusUnauthorized {
						require.Equal(t, `Bearer realm="agentbreaker admin"`, hdr.Get("WWW-Authenticate"))
						require.NotContains(t, body, "crm", "a refused request learns nothing")
					}
				}
			})
		}
	})
	require.Equal(t, breaker.Closed, f.breaker(t, "crm").State())
	refused := 0
	for _, r := range f.logs.records(t) {
		if r["msg"] == "agentbreaker admin: request refused: missing or wrong bearer token" {
			refused++
			require.NotContains(t, r, "token")
		}
	}
	require.Equal(t, 6*3, refused, "every refused request is logged")
}

func TestPageShellNeedsNoTokenAndHoldsNoState(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	status, hdr, body := f.do(t, request{method: http.MethodGet, path: "/", header: map[string]string{"Authorization": ""}})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
	require.Contains(t, body, `<input id="token" type="password"`)
	for _, secret := range []string{"crm", "search", "lookup_customer", "int-1", token} {
		require.NotContains(t, body, secret)
	}
	csp := hdr.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.Contains(t, csp, "script-src 'sha256-")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.Equal(t, "no-store", hdr.Get("Cache-Control"))
	require.Equal(t, "DENY", hdr.Get("X-Frame-Options"))
	require.Equal(t, "nosniff", hdr.Get("X-Content-Type-Options"))
}

func TestMethods(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tests := []struct {
		name string
		r    request
		want int
	}{
		{name: "GET on an action", r: request{method: http.MethodGet, path: "/api/breakers/crm/force-open"}, want: http.StatusMethodNotAllowed},
		{name: "PUT on an action", r: request{method: http.MethodPut, path: "/api/breakers/crm/force-open", header: map[string]string{"Content-Type": "application/json"}}, want: http.StatusMethodNotAllowed},
		{name: "DELETE on a journal action", r: request{method: http.MethodDelete, path: "/api/journal/int-1/discard"}, want: http.StatusMethodNotAllowed},
		{name: "POST on the state", r: request{method: http.MethodPost, path: "/api/state"}, want: http.StatusMethodNotAllowed},
		{name: "POST on the page", r: request{method: http.MethodPost, path: "/"}, want: http.StatusMethodNotAllowed},
		{name: "HEAD on the page", r: request{method: http.MethodHead, path: "/"}, want: http.StatusOK},
		{name: "unknown path", r: request{method: http.MethodGet, path: "/api/nothing"}, want: http.StatusNotFound},
		{name: "unknown action", r: request{method: http.MethodPost, path: "/api/breakers/crm/explode"}, want: http.StatusNotFound},
		{name: "unknown breaker", r: request{method: http.MethodPost, path: "/api/breakers/nope/force-open"}, want: http.StatusNotFound},
	}
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				status, _, body := f.do(t, tt.r)
				require.Equal(t, tt.want, status, body)
			})
		}
	})
	require.Equal(t, breaker.Closed, f.breaker(t, "crm").State(), "no refused request changed anything")
}

func TestBodies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *admin.Config) { c.MaxBodyBytes = 600 })
	tests := []struct {
		name        string
		contentType string
		body        string
		want        int
		wantErr     string
	}{
		{name: "empty", contentType: "application/json", want: http.StatusOK},
		{name: "with reason", contentType: "application/json; charset=utf-8", body: `{"reason":"INC-4711"}`, want: http.StatusOK},
		{name: "oversized", contentType: "application/json", body: `{"reason":"` + strings.Repeat("x", 700) + `"}`, want: http.StatusRequestEntityTooLarge, wantErr: "request body larger than 600 bytes"},
		{name: "form post", contentType: "application/x-www-form-urlencoded", body: "reason=x", want: http.StatusUnsupportedMediaType, wantErr: `Content-Type = \"application/x-www-form-urlencoded\": must be application/json`},
		{name: "text/plain", contentType: "text/plain", body: `{"reason":"x"}`, want: http.StatusUnsupportedMediaType},
		{name: "no content type", contentType: "", want: http.StatusUnsupportedMediaType},
		{name: "unknown field", contentType: "application/json", body: `{"reason":"x","force":true}`, want: http.StatusBadRequest, wantErr: `unknown field \"force\"`},
		{name: "two values", contentType: "application/json", body: `{"reason":"a"}{"reason":"b"}`, want: http.StatusBadRequest, wantErr: "more than one JSON value"},
		{name: "not JSON", contentType: "application/json", body: `reason`, want: http.StatusBadRequest},
		{name: "long reason", contentType: "application/json", body: `{"reason":"` + strings.Repeat("y", 501) + `"}`, want: http.StatusBadRequest, wantErr: "reason: 501 bytes, at most 500"},
		{name: "control characters", contentType: "application/json", body: `{"reason":"ok\nFAKE LOG LINE"}`, want: http.StatusBadRequest, wantErr: "must be printable text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, _, body := f.do(t, request{method: http.MethodPost, path: "/api/breakers/crm/reset", body: tt.body,
				header: map[string]string{"Content-Type": tt.contentType}})
			require.Equal(t, tt.want, status, body)
			if tt.wantErr != "" {
				require.Contains(t, body, tt.wantErr)
			}
		})
	}
}

func TestCrossSitePostsAreRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *admin.Config) { c.TrustedOrigins = []string{"https://ops.example.com"} })
	tests := []struct {
		name   string
		header map[string]string
		want   int
	}{
		{name: "cross-site fetch", header: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: http.StatusForbidden},
		{name: "same-site but other origin", header: map[string]string{"Sec-Fetch-Site": "same-site"}, want: http.StatusForbidden},
		{name: "foreign origin, old browser", header: map[string]string{"Origin": "https://evil.example"}, want: http.StatusForbidden},
		{name: "same origin", header: map[string]string{"Sec-Fetch-Site": "same-origin"}, want: http.StatusOK},
		{name: "typed by the user", header: map[string]string{"Sec-Fetch-Site": "none"}, want: http.StatusOK},
		{name: "no browser headers (curl)", header: nil, want: http.StatusOK},
		{name: "trusted origin", header: map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://ops.example.com"}, want: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, _, body := f.do(t, request{method: http.MethodPost, path: "/api/breakers/crm/force-closed", header: tt.header})
			require.Equal(t, tt.want, status, body)
		})
	}
	// Reading stays possible cross-origin (the browser's same-origin policy keeps the
	// response from a foreign page; the token is still required).
	status, _, _ := f.do(t, request{method: http.MethodGet, path: "/api/state", header: map[string]string{"Sec-Fetch-Site": "cross-site"}})
	require.Equal(t, http.StatusOK, status)
}

func TestBreakerActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	crm := f.breaker(t, "crm")
	steps := []struct {
		action string
		want   breaker.State
	}{
		{"force-open", breaker.ForcedOpen},
		{"force-closed", breaker.ForcedClosed},
		{"reset", breaker.Closed},
	}
	for _, st := range steps {
		status, _, body := f.do(t, request{method: http.MethodPost, path: "/api/breakers/crm/" + st.action, body: `{"reason":"INC-4711"}`})
		require.Equal(t, http.StatusOK, status, body)
		var res admin.ActionResult
		require.NoError(t, json.Unmarshal([]byte(body), &res))
		require.Equal(t, st.action, res.Action)
		require.Equal(t, st.want.String(), res.Breaker.State)
		require.Equal(t, st.want, crm.State())
	}

	// Each action is logged...
	var logged []string
	for _, r := range f.logs.records(t) {
		if r["msg"] == "agentbreaker admin: operator action" {
			require.Equal(t, "crm", r["dependency"])
			require.Equal(t, "INC-4711", r["reason"])
			require.Equal(t, "operator", r["cause"])
			require.NotEmpty(t, r["remote_addr"])
			logged = append(logged, r["action"].(string)+":"+r["from"].(string)+">"+r["to"].(string))
		}
	}
	require.Equal(t, []string{"force-open:closed>forced_open", "force-closed:forced_open>forced_closed", "reset:forced_closed>closed"}, logged)

	// ...and counted as a transition with cause "operator".
	require.NoError(t, testutil.GatherAndCompare(f.reg, strings.NewReader(`
# HELP agentbreaker_breaker_transitions_total Breaker state changes, by from and to state and by cause.
# TYPE agentbreaker_breaker_transitions_total counter
agentbreaker_breaker_transitions_total{cause="cooldown_elapsed",dependency="crm",from="open",to="half_open"} 0
agentbreaker_breaker_transitions_total{cause="failure_rate",dependency="crm",from="closed",to="open"} 0
agentbreaker_breaker_transitions_total{cause="operator",dependency="crm",from="closed",to="forced_open"} 1
agentbreaker_breaker_transitions_total{cause="operator",dependency="crm",from="forced_closed",to="closed"} 1
agentbreaker_breaker_transitions_total{cause="operator",dependency="crm",from="forced_open",to="forced_closed"} 1
agentbreaker_breaker_transitions_total{cause="probe_failed",dependency="crm",from="half_open",to="open"} 0
agentbreaker_breaker_transitions_total{cause="probe_succeeded",dependency="crm",from="half_open",to="closed"} 0
agentbreaker_breaker_transitions_total{cause="slow_call_rate",dependency="crm",from="closed",to="open"} 0
agentbreaker_breaker_transitions_total{cause="cooldown_elapsed",dependency="search",from="open",to="half_open"} 0
agentbreaker_breaker_transitions_total{cause="failure_rate",dependency="search",from="closed",to="open"} 1
agentbreaker_breaker_transitions_total{cause="probe_failed",dependency="search",from="half_open",to="open"} 0
agentbreaker_breaker_transitions_total{cause="probe_succeeded",dependency="search",from="half_open",to="closed"} 0
agentbreaker_breaker_transitions_total{cause="slow_call_rate",dependency="search",from="closed",to="open"} 0
`), "agentbreaker_breaker_transitions_total"))
}

func TestStateDocument(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	status, hdr, body := f.do(t, request{method: http.MethodGet, path: "/api/state"})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "application/json; charset=utf-8", hdr.Get("Content-Type"))
	require.Equal(t, "default-src 'none'; frame-ancestors 'none'", hdr.Get("Content-Security-Policy"))
	var doc admin.State
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	require.Equal(t, f.clock.Now(), doc.Time)
	require.Len(t, doc.Breakers, 2)
	crm, search := doc.Breakers[0], doc.Breakers[1]
	require.Equal(t, "crm", crm.Name)
	require.Equal(t, "closed", crm.State)
	require.Equal(t, "ops-1", crm.PolicyVersion)
	require.Equal(t, []string{"lookup_customer", "update_customer"}, crm.Tools)
	require.Equal(t, "search", search.Name)
	require.Equal(t, "open", search.State)
	require.Equal(t, int64(1), search.WindowFailedCalls)
	require.Equal(t, 30.0, search.RetryAfterSeconds)
	require.Equal(t, f.clock.Now(), search.OpenedAt)
	require.Equal(t, []admin.BulkheadStatus{{Dependency: "crm", InFlight: 3, Limit: 8, Waiting: 1}}, doc.Bulkheads)
	require.Len(t, doc.Routes, 2)
	require.True(t, doc.Routes[1].Serving)
	require.True(t, doc.JournalConfigured)
}

func TestStateDocumentWithoutOptionalParts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *admin.Config) { c.Bulkheads, c.Routes, c.Journal = nil, nil, nil })
	_, _, body := f.do(t, request{method: http.MethodGet, path: "/api/state"})
	require.Contains(t, body, `"bulkheads": []`, "empty lists, not null, so clients need no special case")
	require.Contains(t, body, `"routes": []`)
	require.Contains(t, body, `"journal_configured": false`)
	status, _, _ := f.do(t, request{method: http.MethodGet, path: "/api/journal"})
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = f.do(t, request{method: http.MethodPost, path: "/api/journal/int-1/approve"})
	require.Equal(t, http.StatusNotFound, status)
}

// TestConcurrentRequests runs actions and reads together, for the race detector.
func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			action := []string{"force-open", "force-closed", "reset"}[i%3]
			for range 10 {
				status, _, body := f.do(t, request{method: http.MethodPost, path: "/api/breakers/crm/" + action})
				require.Equal(t, http.StatusOK, status, body)
				status, _, body = f.do(t, request{method: http.MethodGet, path: "/api/state"})
				require.Equal(t, http.StatusOK, status, body)
			}
		})
	}
	wg.Wait()
	n := 0
	for _, r := range f.logs.records(t) {
		if r["msg"] == "agentbreaker admin: operator action" {
			n++
		}
	}
	require.Equal(t, 80, n)
}
