package admin_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

const policyV1 = `policy_version: v1
dependencies:
  crm:
    tools: [lookup]
    policy:
      minimum_calls: 2
`

// syncBuffer is a log destination the handler and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func postPolicy(t *testing.T, url, auth string, body any) (int, string) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url+"/api/policy", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(res.Body)
	return res.StatusCode, out.String()
}

func TestPolicyChangeNeedsTheTokenAndIsAudited(t *testing.T) {
	cfg, err := depfile.ParseYAML([]byte(policyV1))
	require.NoError(t, err)
	m := dependencymap.MustNew(cfg)
	crm, _ := m.Get("crm")
	for range 2 {
		p, _ := crm.Allow()
		p.Failure()
	}
	var logs syncBuffer
	h := admin.MustNew(admin.Config{Token: token, Breakers: m, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		ApplyPolicy: func(name string, file []byte) error { return depfile.ApplyBytes(m, name, file) }})
	srv := httptest.NewServer(h)
	defer srv.Close()
	v2 := strings.NewReplacer("v1", "v2", "minimum_calls: 2", "minimum_calls: 9\n      shadow: true").Replace(policyV1)

	code, _ := postPolicy(t, srv.URL, "", map[string]string{"file": v2})
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "v1", m.PolicyVersion(), "a request without the token changed the policy")

	code, body := postPolicy(t, srv.URL, token, map[string]string{"file": v2, "name": "deps.yaml", "operator": "ana", "reason": "INC-7"})
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "v2", m.PolicyVersion())
	require.Equal(t, breaker.Open, crm.State(), "the change reset the open breaker")
	require.Equal(t, 9, crm.Policy().MinimumCalls)
	require.Contains(t, logs.String(), `"msg":"agentbreaker admin: policy changed"`)
	require.Contains(t, logs.String(), `"operator":"ana"`)
	require.Contains(t, logs.String(), `"old_policy_version":"v1","policy_version":"v2"`)

	code, body = postPolicy(t, srv.URL, token, map[string]string{"file": strings.Replace(v2, "9", "-9", 1), "name": "deps.yaml", "operator": "bo"})
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Contains(t, body, "deps.yaml: line 6")
	require.Equal(t, "v2", m.PolicyVersion())
	require.Equal(t, 9, crm.Policy().MinimumCalls)

	var state admin.State
	getJSON(t, srv.URL+"/api/state", &state)
	require.Equal(t, "v2", state.Policy.Version)
	require.Len(t, state.Policy.Changes, 2)
	newest, first := state.Policy.Changes[0], state.Policy.Changes[1]
	require.Equal(t, "bo", newest.Operator)
	require.NotEmpty(t, newest.Error)
	require.Equal(t, [4]string{"ana", "v1", "v2", "INC-7"}, [4]string{first.Operator, first.OldVersion, first.NewVersion, first.Reason})
	require.False(t, first.At.IsZero())
	require.True(t, state.Breakers[0].Shadow, "the state document has no shadow flag for crm")
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.NoError(t, json.NewDecoder(res.Body).Decode(v))
}

// fleetVersions is a Scopes that reports the replicas' policy versions.
type fleetVersions map[string]string

func (fleetVersions) Scope(string) string                 { return "" }
func (v fleetVersions) PolicyVersions() map[string]string { return v }

func TestPolicyShowsWhetherTheFleetConverged(t *testing.T) {
	cfg, err := depfile.ParseYAML([]byte(policyV1))
	require.NoError(t, err)
	m := dependencymap.MustNew(cfg)
	for _, tt := range []struct {
		replicas fleetVersions
		want     bool
	}{
		{fleetVersions{"r1": "v1", "r2": "v1"}, true},
		{fleetVersions{"r1": "v1", "r2": "v0"}, false},
	} {
		srv := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: m, Scopes: tt.replicas}))
		var state admin.State
		getJSON(t, srv.URL+"/api/state", &state)
		srv.Close()
		require.Equal(t, map[string]string(tt.replicas), state.Policy.Replicas)
		require.Equal(t, tt.want, state.Policy.Converged, "%v", tt.replicas)
	}
}
