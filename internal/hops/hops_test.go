package hops_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/internal/hops"
)

// The three-by-two-by-three turn in each shape (issue 33, Found 2 and 3): without
// agentbreaker every turn sends 18 requests (9 in the workflow, whose run fails at its
// first node); the plugin alone still sends 18 on each turn before the trip; with the
// retry budget no turn sends more than its first attempts plus the budget's share,
// from the first turn, and every turn gets an answer. Over A2A too: the root's
// operation crosses the wire, and the remote's inner failure comes back marked
// (a2aguard's hop.go); a2aRequests holds the requests at the A2A servers.
func TestThreeByTwoByThree(t *testing.T) {
	for _, s := range hops.Shapes {
		t.Run(s.Name, func(t *testing.T) {
			none, err := hops.Run(s, hops.Config{Mode: hops.None})
			require.NoError(t, err)
			plugin, err := hops.Run(s, hops.Config{Mode: hops.Plugin})
			require.NoError(t, err)
			budget, err := hops.Run(s, hops.Config{Mode: hops.Budget})
			require.NoError(t, err)

			perTurn := int64(18)
			if s.Name == "workflow" {
				perTurn = 9 // the first node fails the run; the second never runs
				require.Zero(t, none.Answered, "without agentbreaker every run fails")
			}
			for _, n := range none.PerTurn {
				require.Equal(t, perTurn, n)
			}
			require.Equal(t, int64(18), plugin.PerTurn[0], "the plugin alone does not bound one turn")
			require.Equal(t, 50, plugin.Answered)
			require.Equal(t, 50, budget.Answered, "every turn gets an answer")

			// First attempts: one per operation of the turn. The agent tools' and the
			// nodes' two callers use crm_lookup with the same arguments, one operation;
			// the plain-tool shape has two tools. The budget's share is its floor, one
			// retry per 10 s window, on a dependency this quiet.
			first := int64(1)
			if s.Name == "plain tools" {
				first = 2
			}
			const share = 1
			for i, n := range budget.PerTurn {
				require.LessOrEqual(t, n, first+share, "turn %d", i+1)
			}
			require.Equal(t, first+share, budget.PerTurn[0], "the first turn uses the budget's share, no more")
			if s.Name == "A2A" {
				a2aRequests(t, none, plugin, budget)
			}
			require.Equal(t, 1, budget.Trips)
			require.Zero(t, budget.ClosedWhileDead)
			require.Less(t, budget.Total, plugin.Total)
			t.Logf("%s: first turns without %v, plugin %v, budget %v; over 50 turns %d, %d, %d",
				s.Name, none.PerTurn[:5], plugin.PerTurn[:5], budget.PerTurn[:5], none.Total, plugin.Total, budget.Total)
		})
	}
}

// Found 4 of issue 33: the agent tools listed under the CRM beside the tool they call.
// The breaker must never close on the dead CRM, each cooldown's probe must reach the
// CRM (it is the inner call's, not the agent tool's), and once the CRM answers again
// the next probe closes the breaker.
func TestAgentToolKeyedToItsInnerDependencyCannotOscillate(t *testing.T) {
	agentTool := hops.Shapes[1]
	require.Equal(t, "AgentTool", agentTool.Name)
	for _, m := range []hops.Mode{hops.Plugin, hops.Budget} {
		t.Run(string(m), func(t *testing.T) {
			f, err := hops.Run(agentTool, hops.Config{Mode: m, KeyCallers: true, Turns: 300, RecoverAt: 200})
			require.NoError(t, err)
			require.Zero(t, f.ClosedWhileDead, "no breaker closed on the dead CRM")
			require.Equal(t, 1, f.Trips)
			// Requests while open come only from probes: one lookup per cooldown.
			probes := 0
			for i := 30; i < 200; i++ {
				if f.PerTurn[i] > 0 {
					probes++
					require.LessOrEqual(t, f.PerTurn[i], int64(3), "turn %d: one probe, its client's tries at most", i)
				}
			}
			require.Positive(t, probes, "the probes reached the CRM")
			require.GreaterOrEqual(t, f.ClosedAt, 200)
			require.Less(t, f.ClosedAt, 200+int(breaker.DefaultMaxCooldown.Seconds())+1, "closed by the first probe after the recovery")
			require.Equal(t, 300, f.Answered)
		})
	}
}

// a2aRequests holds the A2A shape's requests at the A2A servers. Without the retry
// budget the root model re-issues each remote agent three times on every turn. With
// it, the root's re-issue of a remote agent whose task marked a failed call is a
// retry of the root's operation (a2aguard, hop.go): a turn sends one request per
// remote agent plus the root budget's share, and a re-issue after an inner refusal
// (the remote's budget spent, its breaker open) is refused at the root: not sent.
func a2aRequests(t *testing.T, none, plugin, budget hops.Figures) {
	t.Helper()
	const tasks = 6 // 2 remote agents x 3 issues by the root model
	for _, f := range []hops.Figures{none, plugin} {
		for i, n := range f.RemotePerTurn {
			require.Equal(t, int64(tasks), n, "turn %d: requests at the A2A servers", i+1)
		}
	}
	const agents, share = 2, 1
	for i, n := range budget.RemotePerTurn {
		require.LessOrEqual(t, n, int64(agents+share), "turn %d: requests at the A2A servers", i+1)
		require.GreaterOrEqual(t, n, int64(agents), "turn %d: each remote agent is asked once", i+1)
	}
	require.Less(t, budget.RemoteTotal, plugin.RemoteTotal/2)
}
