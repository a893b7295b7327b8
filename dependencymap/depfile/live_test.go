package depfile_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

const liveV1 = `policy_version: v1
dependencies:
  crm:
    tools: [lookup]
    policy:
      minimum_calls: 3
      cooldown: 1m
`

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// openMap loads the file at path into a map on a fake clock and trips crm.
func openMap(t *testing.T, path string) (*dependencymap.Map, *breaker.Breaker) {
	t.Helper()
	cfg, err := depfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clock = clock.NewFake(time.Unix(1000, 0))
	m := dependencymap.MustNew(cfg)
	crm, _ := m.Get("crm")
	for range 3 {
		p, _ := crm.Allow()
		p.Failure()
	}
	return m, crm
}

func TestWatchReloadsAChangedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deps.yaml")
	writeFile(t, path, liveV1)
	m, crm := openMap(t, path)
	tick := make(chan struct{})
	reloaded := make(chan error)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal)
	go func() {
		_ = depfile.Watch(ctx, path, m, depfile.WatchConfig{
			Signals: signals,
			Logger:  slog.New(slog.DiscardHandler),
			Sleep: func(ctx context.Context, _ time.Duration) error {
				select {
				case <-tick:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			},
			OnReload: func(_ string, err error) { reloaded <- err },
		})
	}()
	tick <- struct{}{} // unchanged: no reload (a reload would block the next send)
	tick <- struct{}{} // its check may run while the file is written below
	writeFile(t, path, strings.NewReplacer("v1", "v2", "minimum_calls: 3", "minimum_calls: 7\n      shadow: true").Replace(liveV1))
	var err error
	select {
	case tick <- struct{}{}: // the next check sees the change
		err = <-reloaded
	case err = <-reloaded: // the running one saw it
	}
	if err != nil {
		t.Fatal(err)
	}
	if crm.State() != breaker.Open || crm.Snapshot().Window.Failures != 3 {
		t.Errorf("crm %+v after the reload, want it still open with its 3 failures", crm.Snapshot())
	}
	if p := crm.Policy(); p.Version != "v2" || p.MinimumCalls != 7 || !crm.Shadow() || m.PolicyVersion() != "v2" {
		t.Errorf("policy %+v, map version %q: want v2, 7 calls, shadow", p, m.PolicyVersion())
	}

	writeFile(t, path, strings.Replace(liveV1, "cooldown: 1m", "cooldown: soon", 1))
	signals <- os.Interrupt // a signal reloads too
	err = <-reloaded
	if err == nil || !strings.Contains(err.Error(), "deps.yaml: line 7") || !strings.Contains(err.Error(), "cooldown") {
		t.Fatalf("reload of a bad file: %v, want an error naming deps.yaml, line 7 and the key", err)
	}
	if crm.Policy().Version != "v2" || crm.Policy().MinimumCalls != 7 {
		t.Errorf("policy %+v after a refused file, want v2 kept", crm.Policy())
	}
}

func TestApplyRefusesAFileThatReshapesTheMap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deps.yaml")
	writeFile(t, path, liveV1)
	m, crm := openMap(t, path)
	writeFile(t, path, strings.Replace(liveV1, "tools: [lookup]", "tools: [lookup, search]", 1)+"  mail:\n    tools: [send]\n")
	err := depfile.Apply(m, path)
	if err == nil || !strings.Contains(err.Error(), "deps.yaml: line 8") || !strings.Contains(err.Error(), "dependencies.mail") {
		t.Fatalf("Apply: %v, want the new dependency named with its line", err)
	}
	if crm.Policy().Version != "v1" {
		t.Errorf("version %q after a refused file, want v1", crm.Policy().Version)
	}
}
