// Package livepolicy_test changes a running agent's policy three ways (a Go call, its
// dependency file, the admin API) through adk-go's runner
// (issue 45b): the breaker keeps its state and the records carry the new version.
package livepolicy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

func TestMain(m *testing.M) {
	leakcheck.Main(m)
}

func TestApplyWhileTheAgentRunsKeepsTheBreakerOpen(t *testing.T) {
	var sent atomic.Int64
	lookup := callbackstest.FnTool(t, "lookup", func(agent.Context, map[string]any) (map[string]any, error) {
		sent.Add(1)
		return nil, errors.New("503 service unavailable")
	})
	deps := func(version string, cooldown time.Duration) map[string]dependencymap.Dependency {
		return map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"},
			Policy: breaker.Policy{MinimumCalls: 4, Cooldown: cooldown, CooldownMultiplier: 1, Jitter: -1, Version: version}}}
	}
	f := callbackstest.New(t, callbackstest.Config{Tools: []tool.Tool{lookup}, Then: callbackstest.CallsThenText("lookup"),
		Deps: deps("v1", 30*time.Second)})
	for range 4 { // four failed turns trip crm under v1
		f.Run(t, "look it up")
	}
	crm := f.Breaker(t, "crm")
	require.Equal(t, breaker.Open, crm.State())
	require.EqualValues(t, 4, sent.Load())
	before := crm.Snapshot()

	// The same agent, no restart: v2 waits longer and needs more calls to trip.
	require.NoError(t, f.Deps.Apply(dependencymap.Config{Default: callbackstest.Policy, Dependencies: deps("v2", 2*time.Minute)}))
	after := crm.Snapshot()
	require.Equal(t, breaker.Open, after.State, "Apply closed the open breaker")
	require.Equal(t, before.Window, after.Window, "Apply dropped the breaker's window")
	require.Equal(t, "v2", after.PolicyVersion)

	f.Clock.Advance(10 * time.Second) // still open: the call is answered locally
	f.Run(t, "look it up")
	require.EqualValues(t, 4, sent.Load(), "the tool was called while its breaker was open")
	shorts := f.Events.Of(callbacks.EventShortCircuit)
	require.NotEmpty(t, shorts)
	require.Equal(t, "v2", shorts[len(shorts)-1].PolicyVersion, "the record after the change carries the old version")

	// The open period set under v1 keeps its end; the probe then fails and v2's
	// cooldown applies.
	f.Clock.Advance(21 * time.Second)
	f.Run(t, "look it up")
	require.EqualValues(t, 5, sent.Load(), "no probe after the open period")
	require.Equal(t, breaker.Open, crm.State())
	require.Equal(t, 2*time.Minute, crm.RetryAfter(), "the reopened breaker waits v2's cooldown")
	f.RequireClean(t)
}

// The same agent's policy changed by its dependency file (Watch) and by the admin API:
// each change keeps the breaker open and the next record carries its version.
func TestFileAndAdminChangesWhileTheAgentRuns(t *testing.T) {
	lookup := callbackstest.FnTool(t, "lookup", func(agent.Context, map[string]any) (map[string]any, error) {
		return nil, errors.New("503 service unavailable")
	})
	file := func(version string) string {
		return "policy_version: " + version + "\ndefault:\n  minimum_calls: 4\n  cooldown: 30s\n  jitter: -1\n" +
			"dependencies:\n  crm:\n    tools: [lookup]\n"
	}
	path := filepath.Join(t.TempDir(), "deps.yaml")
	require.NoError(t, os.WriteFile(path, []byte(file("v1")), 0o600))
	f := callbackstest.New(t, callbackstest.Config{Tools: []tool.Tool{lookup}, Then: callbackstest.CallsThenText("lookup"),
		Deps: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}}})
	for range 4 {
		f.Run(t, "look it up")
	}
	crm := f.Breaker(t, "crm")
	require.Equal(t, breaker.Open, crm.State())
	lastVersion := func() string {
		f.Run(t, "look it up")
		shorts := f.Events.Of(callbacks.EventShortCircuit)
		require.NotEmpty(t, shorts)
		return shorts[len(shorts)-1].PolicyVersion
	}

	// The file: a changed hash on the next check.
	tick, reloaded := make(chan struct{}), make(chan error)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		_ = depfile.Watch(ctx, path, f.Deps, depfile.WatchConfig{Signals: make(chan os.Signal),
			Logger: slog.New(slog.DiscardHandler), OnReload: func(_ string, err error) { reloaded <- err },
			Sleep: func(ctx context.Context, _ time.Duration) error {
				select {
				case <-tick:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}})
	}()
	defer func() { cancel(); <-watched }()
	tick <- struct{}{} // Watch has taken v1 as the file in force
	// Written whole (a temporary file renamed over it), as deployment tools write: a
	// check running now must not read it half written, which it would refuse.
	require.NoError(t, os.WriteFile(path+".new", []byte(file("v2")), 0o600))
	require.NoError(t, os.Rename(path+".new", path))
	var err error
	select {
	case tick <- struct{}{}: // the next check sees the change
		err = <-reloaded
	case err = <-reloaded: // the running one saw it
	}
	require.NoError(t, err)
	require.Equal(t, breaker.Open, crm.State())
	require.Equal(t, "v2", lastVersion())

	// The admin API, with its token.
	const token = "live-policy-test-token-0123456789"
	srv := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: f.Deps,
		ApplyPolicy: func(name string, file []byte) error { return depfile.ApplyBytes(f.Deps, name, file) }}))
	defer srv.Close()
	body, _ := json.Marshal(map[string]string{"file": file("v3"), "name": "deps.yaml", "operator": "ana", "reason": "test"})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/policy", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, breaker.Open, crm.State())
	require.Equal(t, "v3", lastVersion())
	f.RequireClean(t)
}
