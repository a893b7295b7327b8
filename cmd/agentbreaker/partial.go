package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// simulatePartial runs one partial outage per share in list (sim.RunPartial) and prints
// their tables. Scenario flags still apply; those left out take sim.PartialScenario's
// values; shape is sim.Partial.Shape.
func simulatePartial(s sim.Scenario, list, shape string, stdout io.Writer) error {
	var shares []float64
	for _, field := range strings.Split(list, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(field), 64)
		if err != nil || f <= 0 || f > 1 {
			return fmt.Errorf("-partial: %q: want shares failing, each more than 0 and at most 1 (e.g. 0.3,0.6,0.9)", field)
		}
		shares = append(shares, f)
	}
	for i, f := range shares {
		pr, err := sim.RunPartial(sim.Partial{Scenario: s, Failing: f, Shape: shape}, sim.Options{})
		if err != nil {
			return explain(err)
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprint(stdout, pr.Table())
	}
	return nil
}
