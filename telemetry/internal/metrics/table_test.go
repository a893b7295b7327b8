package metrics

import "testing"

// TestTheBudgetCostsAreTheTablesSums keeps the series budget's costs (constants, since
// telemetry.DefaultSeriesBound is one) equal to the sums of the table's Series.
func TestTheBudgetCostsAreTheTablesSums(t *testing.T) {
	sums := map[string]int{}
	for _, r := range Rows {
		sums[r.Per] += r.Series
	}
	for per, want := range map[string]int{perB: breakerSeries, perT: throttleSeries, perL: limitSeries} {
		if sums[per] != want {
			t.Errorf("the rows per %s sum to %d series; the budget charges %d", per, sums[per], want)
		}
	}
}
