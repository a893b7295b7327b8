package bound_test

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
)

// A label cap of three tool names and a budget of two series: the third name passes
// the cap but not the budget, the fourth neither; both are reported as "other", and
// the budget counts both refusals (a row folded by the cap is one more series it
// has no room for). Hostile bytes never reach a label.
func Example() {
	log := slog.New(slog.DiscardHandler)
	tools := bound.NewGuard("tool", 3, log)
	budget := bound.NewBudget(2, []string{"agentbreaker_calls_total"}, log)
	var shown []string
	for _, name := range []string{"lookup", "search", "invented_by_the_model", "another_one", "lookup"} {
		tool := tools.Value(name)
		if !budget.Admit(bound.Key{Fam: 0, Labels: [4]string{tool}}, 1) {
			tool = bound.Other
		}
		shown = append(shown, tool)
	}
	fmt.Println(strings.Join(shown, " "))
	fmt.Println("folded by the budget:", budget.Folded(0))
	fmt.Printf("%+q %q\n", bound.Sanitize("bad\x00name"), tools.Required(""))
	// Output:
	// lookup search other other lookup
	// folded by the budget: 2
	// "bad\ufffdname" "unknown"
}
