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
