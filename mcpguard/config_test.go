package mcpguard_test

import (
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/auth"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/mcpguard"
)

func TestNewRejectsBadConfig(t *testing.T) {
	cb := callbacks.MustNew(callbacks.Config{Dependencies: dependencymap.MustNew(dependencymap.Config{})})
	ok := mcptoolset.Config{Endpoint: "http://127.0.0.1:1/mcp"}
	_, mem := mcp.NewInMemoryTransports()
	tests := []struct {
		name    string
		cfg     mcpguard.Config
		wantErr string
	}{
		{"no dependency", mcpguard.Config{Callbacks: cb, Toolset: ok}, `Config.Dependency = "": required`},
		{"no callbacks", mcpguard.Config{Dependency: "payments", Toolset: ok}, "Config.Callbacks = nil: required"},
		{"no transport", mcpguard.Config{Dependency: "payments", Callbacks: cb}, "mcpguard: Config.Toolset.Transport = nil: Config.Toolset.Endpoint is empty too: one of them is required"},
		{"timeout too long", mcpguard.Config{Dependency: "payments", Callbacks: cb, Toolset: ok, Timeout: 2 * time.Hour}, "Config.Timeout = 2h0m0s: must be at most 1h"},
		{"list timeout too long", mcpguard.Config{Dependency: "payments", Callbacks: cb, Toolset: ok, ListTimeout: 61 * time.Minute}, "Config.ListTimeout = 1h1m0s"},
		{"bad dependency name", mcpguard.Config{Dependency: "pay\x00", Callbacks: cb, Toolset: ok}, `Config.Dependency = "pay\x00"`},
		{"auth without http", mcpguard.Config{Dependency: "payments", Callbacks: cb,
			Toolset: mcptoolset.Config{Transport: mem, Auth: auth.StaticToken("t")}}, "Config.Toolset.Auth requires a streamable HTTP transport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := mcpguard.New(tt.cfg)
			require.ErrorContains(t, err, tt.wantErr)
			require.Nil(t, ts)
			require.Panics(t, func() { mcpguard.MustNew(tt.cfg) })
		})
	}
}
