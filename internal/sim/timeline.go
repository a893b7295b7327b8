package sim

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTimeline writes the minute-by-minute story of every strategy, then a table of
// headline figures, for a terminal.
func (r *Result) WriteTimeline(w io.Writer) error { return r.write(w, true) }

// WriteSummary writes what WriteTimeline does without the minute-by-minute timeline:
// the scenario, each strategy in one line, and the table of headline figures.
func (r *Result) WriteSummary(w io.Writer) error { return r.write(w, false) }

func (r *Result) write(w io.Writer, minutes bool) error {
	s := r.Scenario
	var b strings.Builder
	fmt.Fprintf(&b, "Scenario: %s down from %s to %s %s (%s, %s of calls fail), %d users, %s, tool timeout %v, seed %d\n",
		s.Dependency, r.Start.Add(s.OutageStart).Format("15:04:05"), r.Start.Add(s.OutageEnd).Format("15:04:05"),
		r.Start.Format("MST"), s.OutageMode, percent(s.OutageErrorRate), s.Users, turnRate(s.TurnRate), s.ToolTimeout, s.Seed)
	if !minutes {
		b.WriteString("\n")
	}
	for _, sr := range r.Strategies {
		if !minutes {
			fmt.Fprintf(&b, "%s: %s\n", sr.Name, sr.Description)
			continue
		}
		fmt.Fprintf(&b, "\n== %s: %s\n", sr.Name, sr.Description)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "minute\tcalls sent\tof them failed\tcalls rejected\tturns ok\tturns degraded\tturns failed\tbreaker\t")
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
		closed := secs(m.CloseAfterRecovery)
		if m.CloseAfterRecovery == nil && m.TripAfterOnset != nil {
			closed = "still open at " + r.Start.Add(s.Duration).Format("15:04")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%d/%d/%d\t%.0f\t\n", sr.Name, m.CallsDuringOutage, secs(m.TripAfterOnset),
			m.ProbesDuringOutage, closed, m.OutageTurns.OK, m.OutageTurns.Degraded, m.OutageTurns.Failed,
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

// turnRate writes a rate of turns per second: "1 turn/s", "0.5 turns/s".
func turnRate(r float64) string {
	if r == 1 {
		return "1 turn/s"
	}
	return fmt.Sprintf("%.3g turns/s", r)
}
