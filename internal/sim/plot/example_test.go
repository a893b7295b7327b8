package plot_test

import (
	"bytes"
	"fmt"
	"image/png"

	"github.com/agentbreaker/agentbreaker/internal/sim"
	"github.com/agentbreaker/agentbreaker/internal/sim/plot"
)

// Draw the design document's incident, one row per strategy.
func ExampleWrite() {
	res, err := sim.Run(sim.Scenario{Strategies: []string{sim.StrategyPolicy}}, sim.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var buf bytes.Buffer
	if err := plot.Write(&buf, res, plot.PNG); err != nil {
		fmt.Println(err)
		return
	}
	img, err := png.Decode(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(img.Bounds().Dx(), "x", img.Bounds().Dy())
	fmt.Println(plot.Caption(res.Strategies[0]))
	fmt.Println(plot.Titles(res)[1])
	// Output:
	// 1498 x 348
	// agentbreaker-policy: 50% failed of ≥20 calls in a count window of the last 20 calls, cooldown 30s fixed
	// calls to enrichment (32 in outage)
}
