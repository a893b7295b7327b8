package modelfailover_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

func TestNewRejectsBadConfigNamingTheField(t *testing.T) {
	llm := &scripted{name: "x"}
	ok := modelfailover.Route{Model: pro, Region: "r1", LLM: llm}
	full, err := dependencymap.New(dependencymap.Config{MaxDependencies: 1})
	require.NoError(t, err)
	tests := []struct {
		name    string
		cfg     modelfailover.Config
		wantErr string
	}{
		{name: "no routes", cfg: modelfailover.Config{},
			wantErr: "modelfailover: Routes = []: at least one route is required"},
		{name: "empty model", cfg: modelfailover.Config{Routes: []modelfailover.Route{ok, {Region: "r2"}}},
			wantErr: `modelfailover: Routes[1].Model = "": model name is required`},
		{name: "same endpoint twice", cfg: modelfailover.Config{Routes: []modelfailover.Route{ok, {Model: pro, Region: "r1", Name: "other"}}},
			wantErr: `modelfailover: Routes[1] = gemini-2.5-pro@r1: same model and region as Routes[0]`},
		{name: "same name twice", cfg: modelfailover.Config{Routes: []modelfailover.Route{{Model: pro, Name: "main"}, {Model: flash, Name: "main"}}},
			wantErr: `modelfailover: Routes[1].Name = main: already the name of Routes[0]`},
		{name: "reserved name", cfg: modelfailover.Config{Routes: []modelfailover.Route{{Model: pro, Name: modelfailover.Unavailable}}},
			wantErr: `modelfailover: Routes[0].Name = unavailable: is reserved for calls no route served`},
		{name: "region with a control character", cfg: modelfailover.Config{Routes: []modelfailover.Route{{Model: pro, Region: "us\x1b[31m"}}},
			wantErr: `modelfailover: Routes[0].Region = "us\x1b[31m": holds the control or format character '\x1b'`},
		{name: "model name not UTF-8", cfg: modelfailover.Config{Routes: []modelfailover.Route{{Model: "pro\xff"}}},
			wantErr: `modelfailover: Routes[0].Model = "pro\xff": is not valid UTF-8`},
		{name: "short share window", cfg: modelfailover.Config{Routes: []modelfailover.Route{ok}, ShareWindow: time.Second},
			wantErr: `modelfailover: ShareWindow = 1s: must be between 1m and 24h`},
		{name: "short pending TTL", cfg: modelfailover.Config{Routes: []modelfailover.Route{ok}, PendingTTL: time.Millisecond},
			wantErr: `modelfailover: PendingTTL = 1ms: must be between 1s and 24h`},
		{name: "negative attempt timeout", cfg: modelfailover.Config{Routes: []modelfailover.Route{ok}, AttemptTimeout: -time.Second},
			wantErr: `modelfailover: AttemptTimeout = -1s: must not be negative`},
		{name: "negative chunk timeout", cfg: modelfailover.Config{Routes: []modelfailover.Route{ok}, ChunkTimeout: -time.Second},
			wantErr: `modelfailover: ChunkTimeout = -1s: must not be negative`},
		{name: "call timeout below attempt timeout", cfg: modelfailover.Config{Routes: []modelfailover.Route{ok},
			AttemptTimeout: 2 * time.Second, CallTimeout: time.Second},
			wantErr: `modelfailover: CallTimeout = 1s: must be at least AttemptTimeout (2s): it bounds the whole attempt`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := modelfailover.New(tt.cfg)
			assert.Nil(t, f)
			require.ErrorIs(t, err, modelfailover.ErrInvalidConfig)
			assert.EqualError(t, err, tt.wantErr)
			assert.Panics(t, func() { modelfailover.MustNew(tt.cfg) })
		})
	}

	// A map that cannot hold another breaker fails New, naming the route.
	_, err = modelfailover.New(modelfailover.Config{Breakers: full,
		Routes: []modelfailover.Route{ok, {Model: flash, Region: "r1"}}})
	require.ErrorIs(t, err, dependencymap.ErrTooManyDependencies)
	assert.Contains(t, err.Error(), "Routes[1] (gemini-2.5-flash@r1)")
}

func TestNewLeavesTheCallersRoutesAlone(t *testing.T) {
	routes := []modelfailover.Route{{Model: pro, Region: "r1", LLM: &scripted{name: "x"}}}
	f, err := modelfailover.New(modelfailover.Config{Routes: routes})
	require.NoError(t, err)
	assert.Empty(t, routes[0].Name)
	assert.Equal(t, pro+"@r1", f.Routes()[0].Name)
	assert.Equal(t, pro, f.Name())
	assert.True(t, f.Routes()[0].Primary)
	assert.NotNil(t, f.Routes()[0].Breaker)
	assert.Equal(t, 50, f.Routes()[0].Breaker.Policy().MinimumCalls, "conservative model defaults")
}

func TestFailoverModelNeedsThePrimarysLLM(t *testing.T) {
	f := modelfailover.MustNew(modelfailover.Config{Routes: []modelfailover.Route{{Model: pro}}})
	for _, err := range f.GenerateContent(t.Context(), newRequest(), false) {
		require.ErrorIs(t, err, modelfailover.ErrNoPrimaryModel)
	}
}

func TestCausesAreBoundedAndCoverTheConstants(t *testing.T) {
	causes := modelfailover.Causes()
	for _, c := range []modelfailover.Cause{modelfailover.CauseBreakerOpen, modelfailover.CauseProbeSucceeded,
		modelfailover.CauseRecovered, modelfailover.CauseAllRoutesOpen, "http_5xx", "http_429", "timeout"} {
		assert.Contains(t, causes, c)
	}
	assert.NotContains(t, causes, modelfailover.Cause("none"))
	seen := map[modelfailover.Cause]bool{}
	for _, c := range causes {
		assert.False(t, seen[c], "duplicate %s", c)
		seen[c] = true
	}
}
