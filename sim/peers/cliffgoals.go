package peers

import (
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// Goal is one of issue 34's goals, as a run measured it.
type Goal struct {
	// What the goal says, the value measured, the bound it must not pass, and
	// whether it is met.
	Text       string
	Got, Bound string
	Met        bool
}

// CliffGoals checks issue 34's goals on a latency cliff run with failsafe-go's row and
// a hanging-calls incident: in the cliff, the adaptive row's goodput at least
// failsafe-go's, the p99 of its admitted calls at most twice the no-load latency
// (Cliff.Service), its blocked worker-seconds at most a third of the fixed bulkhead's;
// in the incident, blocked worker-seconds before the trip at most half of today's.
func CliffGoals(c *sim.CliffResult, h *sim.HangResult) ([]Goal, error) {
	ad, ok1 := c.Row(sim.CliffAdaptive)
	bh, ok2 := c.Row(sim.CliffBulkhead)
	fs, ok3 := c.Row(FailsafeLimiter().Name)
	today, ok4 := h.Row(sim.HangToday)
	with, ok5 := h.Row(sim.HangAdaptive)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return nil, fmt.Errorf("peers: a row is missing (adaptive %v, bulkhead %v, failsafe-go %v, incident today %v, adaptive %v)", ok1, ok2, ok3, ok4, ok5)
	}
	noLoad := c.Cliff.Service
	ws := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	goals := []Goal{
		{"latency cliff: goodput at least failsafe-go's (calls/s)", fmt.Sprintf("%.1f", ad.Goodput), fmt.Sprintf("%.1f", fs.Goodput), ad.Goodput >= fs.Goodput},
		{"latency cliff: p99 of admitted calls at most 2× the no-load latency", fmtMs(ad.P99), fmtMs(2 * noLoad), ad.P99 <= 2*noLoad},
		{"latency cliff: blocked worker-s at most 1/3 of the fixed bulkhead's", ws(ad.BlockedWorkerSeconds), ws(bh.BlockedWorkerSeconds / 3), ad.BlockedWorkerSeconds <= bh.BlockedWorkerSeconds/3},
		{"hanging calls: blocked worker-s before the trip at most 1/2 of today's", ws(with.BlockedWorkerSeconds), ws(today.BlockedWorkerSeconds / 2),
			with.TripAfter > 0 && today.TripAfter > 0 && with.BlockedWorkerSeconds <= today.BlockedWorkerSeconds/2},
	}
	return goals, nil
}

func fmtMs(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

// GoalsTable prints goals, one a line.
func GoalsTable(goals []Goal) string {
	var b strings.Builder
	b.WriteString("Goals (issue 34):\n")
	for _, g := range goals {
		verdict := "met"
		if !g.Met {
			verdict = "NOT MET"
		}
		fmt.Fprintf(&b, "  %s: %s, bound %s: %s\n", g.Text, g.Got, g.Bound, verdict)
	}
	return b.String()
}

// SeedsTable runs the latency cliff (with failsafe-go's row) and the hanging-calls
// incident on each seed and prints each goal's measure and bound per seed, so that a
// page shows how far one seed's verdict carries. It takes t for the synctest bubble
// RunCliff needs.
func SeedsTable(t *testing.T, seeds ...uint64) (string, error) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "seed\tgoodput/s (failsafe-go)\tp99 (bound)\tblocked worker-s (bound)\tincident blocked worker-s (bound)\t")
	for _, seed := range seeds {
		c, err := RunCliff(t, sim.Cliff{Seed: seed})
		if err != nil {
			return "", err
		}
		h, err := sim.RunHangIncident(sim.HangIncident{Seed: seed})
		if err != nil {
			return "", err
		}
		goals, err := CliffGoals(c, h)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(tw, "%d", seed)
		for _, g := range goals {
			mark := ""
			if !g.Met {
				mark = " NOT MET"
			}
			fmt.Fprintf(tw, "\t%s (%s)%s", g.Got, g.Bound, mark)
		}
		fmt.Fprintln(tw, "\t")
	}
	if err := tw.Flush(); err != nil {
		return "", err
	}
	return b.String(), nil
}
