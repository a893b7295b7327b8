package fleet_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/fleet"
)

// Config.Map attaches a dependency map at New: its breakers, those it has and those it
// creates later, are the fleet's without an AttachMap call, which a newcomer could
// forget and then run a fleet that syncs nothing (issue 48, item 1). Attaching needs
// no Redis: the address here answers nothing.
func TestConfigMapAttachesAtNew(t *testing.T) {
	m := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup"}}}})
	f, err := fleet.New(fleet.Config{Addr: "127.0.0.1:1", App: "production", Map: m})
	require.NoError(t, err)
	defer f.Close()
	_, ok := f.Status("crm")
	require.True(t, ok, "the map's breaker is attached")
	_, err = m.ForTool("invented_tool") // a breaker the map creates on demand
	require.NoError(t, err)
	require.NoError(t, f.AttachMap(m), "attaching the same map again is harmless")

	plain, err := fleet.New(fleet.Config{Addr: "127.0.0.1:1", App: "production"})
	require.NoError(t, err)
	defer plain.Close()
	_, ok = plain.Status("crm")
	require.False(t, ok, "without Map nothing is attached")
}
