package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// partialFlags runs the partial outage simulate's flags ask for (list is -partial),
// or refuses flags that need -partial without it. done says that it ran or refused.
func partialFlags(fs *flag.FlagSet, s sim.Scenario, list, shape string, byPriority bool, stdout io.Writer) (done bool, err error) {
	shapeSet := false
	fs.Visit(func(f *flag.Flag) { shapeSet = shapeSet || f.Name == "shape" })
	switch {
	case byPriority && (list == "" || shapeSet):
		return true, errors.New("-by-priority: runs both shapes of a partial outage; add -partial (e.g. -partial 0.6) and leave -shape out")
	case list != "":
		return true, simulatePartial(s, list, shape, byPriority, stdout)
	case shapeSet:
		return true, fmt.Errorf("-shape %s: only a partial outage has a shape; add -partial (e.g. -partial 0.6)", shape)
	}
	return false, nil
}

// simulatePartial runs one partial outage per share in list (sim.RunPartial) and prints
// their tables. Scenario flags still apply; those left out take sim.PartialScenario's
// values; shape is sim.Partial.Shape. With byPriority it prints simulatePriorities'
// table instead.
func simulatePartial(s sim.Scenario, list, shape string, byPriority bool, stdout io.Writer) error {
	var shares []float64
	for _, field := range strings.Split(list, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(field), 64)
		if err != nil || f <= 0 || f > 1 {
			return fmt.Errorf("-partial: %q: want shares failing, each more than 0 and at most 1 (e.g. 0.3,0.6,0.9)", field)
		}
		shares = append(shares, f)
	}
	if byPriority {
		return simulatePriorities(s, shares, stdout)
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

// simulatePriorities runs, per share, the throttle row alone in each shape with half
// the turns low and half normal, and prints what its throttle shed by priority
// (sim.PriorityTable).
func simulatePriorities(s sim.Scenario, shares []float64, stdout io.Writer) error {
	for i, f := range shares {
		var results []*sim.PartialResult
		for _, shape := range sim.Shapes() {
			pr, err := sim.RunPartial(sim.Partial{Scenario: s, Failing: f, Shape: shape, LowNormal: true,
				Rows: []string{sim.StrategyThrottle}}, sim.Options{})
			if err != nil {
				return explain(err)
			}
			results = append(results, pr)
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprint(stdout, sim.PriorityTable(results))
	}
	return nil
}
