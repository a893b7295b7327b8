package docs

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// modelRetriesFlags are the two runs docs/model-failover.md shows: a 503 outage,
// and a 429 stating 40 s against a 2 s turn deadline.
var modelRetriesFlags = map[string]string{
	"503": "",
	"429": " -status 429 -retry-after 40s -deadline 2s -turns 20",
}

// modelRetriesFigure is one value of one row of `agentbreaker model-retries -json`.
func modelRetriesFigure(flags, row string, get func(sim.ModelRetriesRow) string) figure {
	return figure{cmd: "agentbreaker model-retries -json" + flags, value: func(out []byte) (string, error) {
		var rows []sim.ModelRetriesRow
		if err := json.Unmarshal(out, &rows); err != nil {
			return "", fmt.Errorf("model-retries' JSON: %w", err)
		}
		for _, r := range rows {
			if r.Name == row {
				return get(r), nil
			}
		}
		return "", fmt.Errorf("no row %q in model-retries' JSON", row)
	}}
}

func init() {
	// modelretries.<run>.<sdk|rule>.<column>
	for run, flags := range modelRetriesFlags {
		for short, row := range map[string]string{"sdk": sim.RowSDKDefaults, "rule": sim.RowFailover} {
			p := "modelretries." + run + "." + short + "."
			figures[p+"requests"] = modelRetriesFigure(flags, row, func(r sim.ModelRetriesRow) string { return strconv.Itoa(r.Requests) })
			figures[p+"attempts"] = modelRetriesFigure(flags, row, func(r sim.ModelRetriesRow) string { return strconv.Itoa(r.Attempts) })
			figures[p+"per_attempt"] = modelRetriesFigure(flags, row, func(r sim.ModelRetriesRow) string {
				return strconv.FormatFloat(r.PerAttempt, 'f', -1, 64)
			})
			figures[p+"answered"] = modelRetriesFigure(flags, row, func(r sim.ModelRetriesRow) string { return strconv.Itoa(r.Answered) })
			figures[p+"turns"] = modelRetriesFigure(flags, row, func(r sim.ModelRetriesRow) string { return strconv.Itoa(r.Turns) })
			figures[p+"slept"] = modelRetriesFigure(flags, row, func(r sim.ModelRetriesRow) string {
				return strconv.FormatFloat(r.Slept.Seconds(), 'f', 1, 64) + " s"
			})
		}
	}
}
