package probe_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
	"github.com/agentbreaker/agentbreaker/probe"
)

// TestFromADependencyFile: a probe written in the dependency file (a health URL and
// the fleet's max_probe_interval) is what the prober runs, at that interval.
func TestFromADependencyFile(t *testing.T) {
	srv := breakertest.NewServer(t)
	srv.Set(breakertest.Status(503))
	for _, every := range []time.Duration{10 * time.Second, 20 * time.Second} {
		cfg, err := depfile.ParseYAML([]byte(`
max_probe_interval: ` + every.String() + `
default: {minimum_calls: 1, jitter: -1}
dependencies:
  crm:
    tools: [lookup]
    probe: {url: "` + srv.URL + `/health", timeout: 2s}
  mail:
    tools: [send_mail]
`))
		require.NoError(t, err)
		clk := clock.NewFake(time.Time{})
		cfg.Clock = clk
		m := dependencymap.MustNew(cfg)
		p, err := probe.FromMap(m, probe.Config{Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		crm, _ := m.Get("crm")
		mail, _ := m.Get("mail")
		require.True(t, crm.HasProber())
		require.False(t, mail.HasProber(), "no probe in the file: none attached")
		pm, _ := crm.Allow()
		pm.Failure()
		require.Equal(t, every, crm.RetryAfter(), "the file's max_probe_interval bounds the open period")
		before := srv.Requests()
		clk.Advance(every)
		next := p.ProbeDue(t.Context())
		require.Equal(t, before+1, srv.Requests(), "the file's URL was probed")
		require.Equal(t, clk.Now().Add(every), next)
		p.Close()
	}
}

func TestFromMapRunsAGoFunc(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	var calls int
	m := dependencymap.MustNew(dependencymap.Config{Clock: clk, Default: breaker.Policy{MinimumCalls: 1, Jitter: -1},
		Dependencies: map[string]dependencymap.Dependency{"kb": {Tools: []string{"search"},
			Probe: &dependencymap.Probe{Func: func(context.Context) error { calls++; return errors.New("down") }}}}})
	p, err := probe.FromMap(m, probe.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer p.Close()
	b, _ := m.Get("kb")
	pm, _ := b.Allow()
	pm.Failure()
	clk.Advance(30 * time.Second)
	p.ProbeDue(t.Context())
	require.Equal(t, 1, calls)
}

func TestFromMapWithoutProbes(t *testing.T) {
	m := dependencymap.MustNew(dependencymap.Config{})
	p, err := probe.FromMap(m, probe.Config{})
	require.NoError(t, err)
	require.Nil(t, p)
	p.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, p.Run(ctx), context.Canceled)
}

func TestAProbeThatCannotWorkIsRefused(t *testing.T) {
	dep := func(p *dependencymap.Probe) dependencymap.Config {
		return dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{"crm": {Probe: p}}}
	}
	ok := func(context.Context) error { return nil }
	tests := []struct {
		name string
		cfg  dependencymap.Config
		want string
	}{
		{"no URL, no Func", dep(&dependencymap.Probe{}), `Dependencies["crm"].Probe.URL = "": Func is nil too`},
		{"both", dep(&dependencymap.Probe{URL: "http://x/h", Func: ok}), `Probe.URL = http://x/h: Func is set too`},
		{"relative URL", dep(&dependencymap.Probe{URL: "/health"}), `Probe.URL = /health`},
		{"negative timeout", dep(&dependencymap.Probe{Func: ok, Timeout: -time.Second}), "Probe.Timeout = -1s"},
		{"interval out of range", dependencymap.Config{MaxProbeInterval: 2 * time.Hour}, "MaxProbeInterval = 2h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dependencymap.New(tt.cfg)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := depfile.ParseYAML([]byte("dependencies:\n  crm:\n    probe: {url: \"ftp://x\"}\n"))
	require.ErrorContains(t, err, `Probe.URL = ftp://x: must be an absolute http or https URL`)
	_, err = depfile.ParseYAML([]byte("dependencies:\n  crm:\n    probe: {url: \"http://x/h\", timeout: soon}\n"))
	require.ErrorContains(t, err, `dependencies.crm.probe.timeout = "soon"`)
	_, err = depfile.ParseYAML([]byte("dependencies:\n  crm:\n    probe: {url: \"http://x/h\", tool: ping}\n"))
	require.ErrorContains(t, err, "tool", "an unknown probe field is an error")
	m := dependencymap.MustNew(dependencymap.Config{Default: breaker.Policy{ProbeLease: time.Second},
		Dependencies: map[string]dependencymap.Dependency{"crm": {Probe: &dependencymap.Probe{Func: ok, Timeout: time.Minute}}}})
	_, err = probe.FromMap(m, probe.Config{})
	require.ErrorContains(t, err, "Checks[0].Timeout = 1m0s", "a timeout past the lease")
}
