// Command partialtable prints the partial-outage tables of docs/partial-outages.md at
// 30%, 60% and 90% failing, with failsafe-go's adaptivethrottler as the last row. From
// the repository's root:
//
//	go -C sim/peers run ./cmd/partialtable
//
// test/docs runs it and compares what it prints with the page.
//
// failsafe-go's throttler reads the wall clock, which only a testing/synctest bubble
// makes follow the simulator's virtual clock, and only a test gets a bubble. So main
// runs the tables as the one test of testing.Main and writes them to standard output
// itself; testing's closing PASS or FAIL line goes to the null device. It exits 1 when
// the simulator fails.
package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentbreaker/agentbreaker/sim/peers"
)

func main() {
	out := os.Stdout
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "partialtable:", err)
		os.Exit(1)
	}
	os.Stdout = null
	all := func(string, string) (bool, error) { return true, nil }
	testing.Main(all, []testing.InternalTest{{Name: "partialtable", F: func(t *testing.T) {
		prs, err := peers.RunPartial(t, peers.Failing...)
		if err != nil {
			fmt.Fprintln(os.Stderr, "partialtable:", err)
			t.FailNow()
		}
		tables := make([]string, len(prs))
		for i, pr := range prs {
			tables[i] = pr.Table()
		}
		fmt.Fprint(out, strings.Join(tables, "\n"))
	}}}, nil, nil)
}
