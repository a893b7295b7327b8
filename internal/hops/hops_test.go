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
// from the first turn, and every turn gets an answer. Over A2A the budget's bound does
// not hold (a2aBounds says what does, and why).
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
			if s.Name == "A2A" {
				a2aBounds(t, none, plugin, budget)
			} else {
				for i, n := range budget.PerTurn {
					require.LessOrEqual(t, n, first+share, "turn %d", i+1)
				}
				require.Equal(t, first+share, budget.PerTurn[0], "the first turn uses the budget's share, no more")
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

// a2aBounds holds the A2A shape to what it does meet. The CRM's breaker and retry
// budget are the remote service's, and each remote task is an invocation of the
// remote's runner: nothing of the root's invocation crosses the wire, so the root
// model's re-issue of a remote agent is new work to the remote, attempt 1 of a new
// operation, not a retry its budget is charged for. A turn therefore sends one first
// attempt per remote task (three per remote agent: 6) plus the budget's share of the
// client's own retries, not the 1 + 1 of the AgentTool shape, until the CRM's breaker
// trips (20 failures, as in the other shapes); from then on only its half-open probes
// reach the CRM. The
// remote agents answer in words ("I could not reach the CRM."), completed A2A tasks,
// so the root's a2aguard breakers see successes and every turn still sends its 6
// requests to the A2A servers, the root re-issuing each remote agent as often as
// before the trip.
func a2aBounds(t *testing.T, none, plugin, budget hops.Figures) {
	t.Helper()
	const tasks = 6 // 2 remote agents x 3 issues by the root model
	for _, f := range []hops.Figures{none, plugin, budget} {
		for i, n := range f.RemotePerTurn {
			require.Equal(t, int64(tasks), n, "turn %d: requests at the A2A servers", i+1)
		}
	}
	tripped := false
	var before, after int64 // CRM requests before the trip, and after it
	for i, n := range budget.PerTurn {
		if tripped {
			// Open: nothing but a cooldown's half-open probe, with its client's tries.
			require.LessOrEqual(t, n, int64(3), "turn %d: the remote's CRM breaker is open", i+1)
			after += n
			continue
		}
		// One first attempt per remote task, plus the budget's share of the client's
		// retries: 10% of the operations started plus one per 10 s window.
		require.LessOrEqual(t, n, int64(tasks+2), "turn %d", i+1)
		before += n
		tripped = n < tasks // the trip came in this turn: some remote tasks were refused
	}
	require.True(t, tripped, "the remote's CRM breaker tripped")
	require.Greater(t, budget.PerTurn[0], int64(2),
		"across A2A the root's re-issue is not charged to the remote's budget (if this fails, the hop now carries the operation: tighten the bound)")
	require.Less(t, budget.PerTurn[0], plugin.PerTurn[0], "the budget still bounds the client's own retries")
	require.Less(t, after, before, "after the trip only probes reach the CRM")
}
