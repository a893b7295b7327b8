package sim

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTimeline writes the minute-by-minute story of every strategy, then a table of
// headline figures, for a terminal.
func (r *Result) WriteTimeline(w io.Writer) error {
	s := r.Scenario
	var b strings.Builder
	fmt.Fprintf(&b, "Scenario: %s down from %s to %s (%s, %.0f%% of calls fail), %d users, %.2g turns/s, tool timeout %v, seed %d\n",
		s.Dependency, r.Start.Add(s.OutageStart).Format("15:04:05"), r.Start.Add(s.OutageEnd).Format("15:04:05"),
		s.OutageMode, s.OutageErrorRate*100, s.Users, s.TurnRate, s.ToolTimeout, s.Seed)
	for _, sr := range r.Strategies {
		fmt.Fprintf(&b, "\n== %s: %s\n", sr.Name, sr.Description)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "minute\tcalls\tfailed\trejected\tturns ok\tdegraded\tfailed\tbreaker\t")
		for _, m := range sr.Minutes {
			state := "-"
			if sr.Breaker {
				state = m.State
			}
			mark := " "
			if at := m.At; !at.Before(r.Start.Add(s.OutageStart)) && at.Before(r.Start.Add(s.OutageEnd)) {
				mark = "!"
			}
			fmt.Fprintf(tw, "%s%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t", mark, m.At.Format("15:04"), m.Calls, m.Failures, m.Rejected,
				m.Turns.OK, m.Turns.Degraded, m.Turns.Failed, state)
			if len(m.Changes) > 0 {
				fmt.Fprintf(tw, " %s", shorten(m.Changes, 4))
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tcalls in outage\ttrip after onset\tprobes\tclosed after recovery\tturns ok/degraded/failed in outage\thung worker-s\t")
	for _, sr := range r.Strategies {
		m := sr.Summary
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%d/%d/%d\t%.0f\t\n", sr.Name, m.CallsDuringOutage, secs(m.TripAfterOnset),
			m.ProbesDuringOutage, secs(m.CloseAfterRecovery), m.OutageTurns.OK, m.OutageTurns.Degraded, m.OutageTurns.Failed,
			m.WorkerSecondsHung)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func secs(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1fs", *v)
}

func shorten(changes []string, n int) string {
	if len(changes) <= n {
		return strings.Join(changes, ", ")
	}
	return strings.Join(changes[:n], ", ") + fmt.Sprintf(" (+%d)", len(changes)-n)
}
