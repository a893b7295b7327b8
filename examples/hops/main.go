// Command hops prints the three-by-two-by-three case of issue 33 through adk-go's real
// runner, in each shape a tool is reached by (plain tools, AgentTool, remote agents
// over A2A, a workflow): the requests that reached a dead CRM in each of the first five
// turns and over 50 turns, the turns answered, the CRM breaker's trips and, for A2A,
// the requests that reached the remote agents' A2A servers over 50 turns. docs/tools.md shows its output; the
// goals are tested in internal/hops.
//
//	go run ./examples/hops
package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/agentbreaker/agentbreaker/internal/hops"
)

var modeNames = map[hops.Mode]string{
	hops.None:   "adk-go alone",
	hops.Plugin: "plugin (README)",
	hops.Budget: "plugin + SideEffects.Retry",
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hops:", err)
		os.Exit(1)
	}
}

func run() error {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shape\tagentbreaker\tturn 1\t2\t3\t4\t5\t50 turns\tanswered\ttrips\tA2A requests\t")
	for _, s := range hops.Shapes {
		for _, m := range hops.Modes {
			f, err := hops.Run(s, hops.Config{Mode: m})
			if err != nil {
				return err
			}
			row(tw, s.Name, modeNames[m], f)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Println()
	fmt.Println("AgentTool keyed to the CRM beside its inner tool (Found 4), 300 turns, the CRM back from turn 201:")
	tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "agentbreaker\trequests while dead\tturns with a probe\tclosed while dead\tclosed at turn\t")
	for _, m := range []hops.Mode{hops.Plugin, hops.Budget} {
		f, err := hops.Run(hops.Shapes[1], hops.Config{Mode: m, KeyCallers: true, Turns: 300, RecoverAt: 200})
		if err != nil {
			return err
		}
		var dead int64
		probes := 0
		for i, n := range f.PerTurn[:200] {
			dead += n
			if n > 0 && i > 0 && f.PerTurn[i-1] == 0 {
				probes++
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", modeNames[m], dead, probes, f.ClosedWhileDead, f.ClosedAt+1)
	}
	return tw.Flush()
}

func row(tw *tabwriter.Writer, shape, mode string, f hops.Figures) {
	turns := make([]string, 5)
	for i := range turns {
		turns[i] = fmt.Sprint(f.PerTurn[i])
	}
	remote := "-"
	if f.RemoteTotal > 0 {
		remote = fmt.Sprint(f.RemoteTotal)
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d/50\t%d\t%s\t\n", shape, mode, strings.Join(turns, "\t"), f.Total, f.Answered, f.Trips, remote)
}
