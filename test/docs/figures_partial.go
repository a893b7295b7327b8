package docs

import (
	"fmt"
	"strings"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// partialFigure is one cell of a partial-outage table that `agentbreaker simulate
// -partial SHARE [-shape SHAPE]` prints: the row's live data ("36.0%") or calls sent
// per success ("1.25").
func partialFigure(cmd, row, column string) figure {
	return figure{cmd: cmd, value: func(out []byte) (string, error) {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) != 7 || f[0] != row {
				continue
			}
			switch column {
			case "live":
				return f[1], nil
			case "waste":
				return f[4], nil
			}
			return "", fmt.Errorf("no column %q", column)
		}
		return "", fmt.Errorf("no row %s in %q's table", row, cmd)
	}}
}

// The 60% tables of docs/partial-outages.md, in both shapes:
// partial.<shape>.<row>.<live|waste>, the row named as the table names it.
func init() {
	cmds := map[string]string{
		"capacity":         "agentbreaker simulate -partial 0.6",
		"load_independent": "agentbreaker simulate -partial 0.6 -shape " + sim.ShapeLoadIndependent,
	}
	for shape, cmd := range cmds {
		for _, row := range sim.PartialStrategies() {
			for _, col := range []string{"live", "waste"} {
				figures["partial."+shape+"."+row+"."+col] = partialFigure(cmd, row, col)
			}
		}
	}
}

// priorityFigure is one cell of the table `agentbreaker simulate -partial 0.6
// -by-priority` prints: for a shape, the share of low or normal calls shed, of low
// calls shed where normal ones were, or of normal calls shed beside a low call sent.
func priorityFigure(shape string, column int) figure {
	cmd := "agentbreaker simulate -partial 0.6 -by-priority"
	return figure{cmd: cmd, value: func(out []byte) (string, error) {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) == 5 && f[0] == shape {
				return f[column], nil
			}
		}
		return "", fmt.Errorf("no shape %s in %q's table", shape, cmd)
	}}
}

// The shed-by-priority table of docs/partial-outages.md:
// priority.<shape>.<low|normal|low_where_normal|normal_beside_low>.
func init() {
	for _, shape := range sim.Shapes() {
		name := "priority." + strings.ReplaceAll(shape, "-", "_") + "."
		for i, col := range []string{"low", "normal", "low_where_normal", "normal_beside_low"} {
			figures[name+col] = priorityFigure(shape, i+1)
		}
	}
}
