package admin_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
)

// These tests use a Scopes kept by the test, so that admin's tests import no Redis
// client; test/admin drives the handler with a real *fleet.Fleet on a real Redis.

// fakeScopes answers Scope from a map the test changes.
type fakeScopes struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *fakeScopes) Scope(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[name]
}

func (s *fakeScopes) set(name, scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[name] = scope
}

type scopeBreakers []*breaker.Breaker

func (l scopeBreakers) Breakers() []*breaker.Breaker { return l }
func (l scopeBreakers) Get(key string) (*breaker.Breaker, bool) {
	for _, b := range l {
		if b.Name() == key {
			return b, true
		}
	}
	return nil, false
}

// rawState fetches /api/state and returns each breaker's JSON object by name.
func rawState(t *testing.T, url string) map[string]map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/api/state", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var doc struct {
		Breakers []map[string]any `json:"breakers"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&doc))
	out := map[string]map[string]any{}
	for _, b := range doc.Breakers {
		out[b["name"].(string)] = b
	}
	return out
}

func TestScopeInTheStateDocument(t *testing.T) {
	t.Parallel()
	hostile := `<img src=x onerror="document.title='pwned'">`
	var list scopeBreakers
	for _, n := range []string{"crm", "search", "maps", "odd", hostile} {
		list = append(list, breaker.MustNew(breaker.Config{Name: n, Policy: breaker.Policy{Jitter: -1}}))
	}
	scopes := &fakeScopes{m: map[string]string{"crm": "fleet", "search": "local", "odd": "<b>weird</b>", hostile: "fleet"}}
	var logs bytes.Buffer
	var logMu sync.Mutex
	h := admin.MustNew(admin.Config{Token: token, Breakers: list, Scopes: scopes,
		Logger: slog.New(slog.NewJSONHandler(lockedWriter{&logMu, &logs}, nil))})
	srv := httptest.NewServer(h)
	defer srv.Close()

	scopeOf := func(st map[string]map[string]any, name string) any {
		v, ok := st[name]["scope"]
		if !ok {
			return nil // omitted
		}
		return v
	}
	st := rawState(t, srv.URL)
	require.Equal(t, "fleet", scopeOf(st, "crm"))
	require.Equal(t, "local", scopeOf(st, "search"))
	require.Nil(t, scopeOf(st, "maps"), "a breaker the fleet has not attached has no scope")
	require.Equal(t, "local", scopeOf(st, "odd"), "anything but fleet does not follow the fleet")
	require.Equal(t, "fleet", scopeOf(st, hostile))

	// The scope is read afresh on every request: Redis went away.
	scopes.set("crm", "local")
	require.Equal(t, "local", scopeOf(rawState(t, srv.URL), "crm"))

	// An operator action on an attached breaker says its scope, in the response and in
	// the log.
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/breakers/search/force-open", strings.NewReader(`{"reason":"drill"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var out admin.ActionResult
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "local", out.Breaker.Scope)
	logMu.Lock()
	require.Contains(t, logs.String(), `"scope":"local"`)
	logMu.Unlock()

	// Without Scopes, no breaker has a scope field at all.
	bare := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: list}))
	defer bare.Close()
	for name, b := range rawState(t, bare.URL) {
		require.NotContains(t, b, "scope", name)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestPageShowsScopeAsText checks the page's script: the scope badge and its tooltip
// are built with textContent, a class from a fixed set and a fixed title, never from
// markup, and the page says operator actions apply to every replica. (The browser test
// in test/admin runs the page itself.)
func TestPageShowsScopeAsText(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: scopeBreakers{}}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/")
	require.NoError(t, err)
	page, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
	html := string(page)
	require.Contains(t, html, `"badge scope " + tr.dataset.scope`)
	require.Contains(t, html, `tr.dataset.scope = b.scope === "fleet" ? "fleet" : "local"`)
	require.Contains(t, html, "Force open, Force closed and Reset apply to every replica.")
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"} {
		require.NotContains(t, html, sink)
	}
}

// classifiedScopes is a Scopes that also says why a breaker is local.
type classifiedScopes struct {
	*fakeScopes
	errs map[string]string
}

func (s classifiedScopes) ScopeError(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errs[name]
}

// Issue 26d: a local breaker carries the class of the error that keeps it local, from
// a fixed set; a breaker that follows the fleet carries none.
func TestScopeErrorInTheStateDocument(t *testing.T) {
	t.Parallel()
	var list scopeBreakers
	for _, n := range []string{"crm", "search", "maps", "odd"} {
		list = append(list, breaker.MustNew(breaker.Config{Name: n, Policy: breaker.Policy{Jitter: -1}}))
	}
	scopes := classifiedScopes{
		fakeScopes: &fakeScopes{m: map[string]string{"crm": "local", "search": "local", "maps": "fleet", "odd": "local"}},
		errs:       map[string]string{"crm": "auth", "search": "timeout", "maps": "auth", "odd": "<script>"},
	}
	srv := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: list, Scopes: scopes}))
	defer srv.Close()
	st := rawState(t, srv.URL)
	require.Equal(t, "auth", st["crm"]["scope_error"])
	require.Equal(t, "timeout", st["search"]["scope_error"])
	require.NotContains(t, st["maps"], "scope_error", "a fleet-wide breaker has no error")
	require.NotContains(t, st["odd"], "scope_error", "a class outside the fixed set is dropped")

	// Without ScopeErrors, no scope_error.
	plain := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: list, Scopes: scopes.fakeScopes}))
	defer plain.Close()
	for name, b := range rawState(t, plain.URL) {
		require.NotContains(t, b, "scope_error", name)
	}
}
