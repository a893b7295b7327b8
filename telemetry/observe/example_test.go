package observe_test

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

// rejections counts short-circuited calls and ignores everything else: embedding Nop
// provides the methods it does not care about.
type rejections struct {
	observe.Nop
	n atomic.Int64
}

func (r *rejections) ShortCircuit(context.Context, observe.ShortCircuit) { r.n.Add(1) }

func Example() {
	r := &rejections{}
	var o observe.Observer = r
	o.ShortCircuit(context.Background(), observe.ShortCircuit{Dependency: "crm", Tool: "lookup_customer", State: breaker.Open})
	o.RouteServing("gemini-2.5-flash", "europe-west4") // ignored by Nop
	fmt.Println("short-circuits:", r.n.Load())
	// Output:
	// short-circuits: 1
}
