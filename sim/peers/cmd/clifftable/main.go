// Command clifftable prints the tables of docs/adaptive-concurrency.md: the latency
// cliff with failsafe-go's adaptivelimiter as the last row, the hanging-calls incident,
// issue 34's goals measured on them, and the same goals on seeds 1 to 4. From the repository's root:
//
//	go -C sim/peers run ./cmd/clifftable
//
// test/docs runs it and compares what it prints with the page. As ./cmd/partialtable
// does, main runs the tables as the one test of testing.Main, because failsafe-go reads
// the wall clock and only a test gets the testing/synctest bubble that makes it follow
// the simulator's. It exits 1 when the simulator fails (a missed goal is printed, and
// fails TestCliffGoals).
package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/sim"
	"github.com/agentbreaker/agentbreaker/sim/peers"
)

func main() {
	out := os.Stdout
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "clifftable:", err)
		os.Exit(1)
	}
	os.Stdout = null
	all := func(string, string) (bool, error) { return true, nil }
	testing.Main(all, []testing.InternalTest{{Name: "clifftable", F: func(t *testing.T) {
		c, err := peers.RunCliff(t, sim.Cliff{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "clifftable:", err)
			t.FailNow()
		}
		h, err := sim.RunHangIncident(sim.HangIncident{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "clifftable:", err)
			t.FailNow()
		}
		goals, err := peers.CliffGoals(c, h)
		if err != nil {
			fmt.Fprintln(os.Stderr, "clifftable:", err)
			t.FailNow()
		}
		seeds, err := peers.SeedsTable(t, 1, 2, 3, 4)
		if err != nil {
			fmt.Fprintln(os.Stderr, "clifftable:", err)
			t.FailNow()
		}
		fmt.Fprint(out, c.Table(), "\n", h.Table(), "\n", peers.GoalsTable(goals), "\nThe same goals on seeds 1 to 4 (measure, and bound in parentheses):\n\n", seeds)
	}}}, nil, nil)
}
