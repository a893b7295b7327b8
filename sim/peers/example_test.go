package peers_test

import (
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker/sim/peers"
)

// The guard as the simulator drives it: admit a call, report its outcome. (The
// simulator runs it inside a testing/synctest bubble so that failsafe-go's window
// follows virtual time; see RunPartial.)
func ExampleFailsafeThrottler() {
	peer := peers.FailsafeThrottler()
	now := time.Date(2026, 1, 1, 14, 0, 0, 0, time.UTC)
	g := peer.New(func() time.Time { return now })
	admitted := 0
	for range 10 {
		if g.Admit() {
			admitted++
			g.Done(false)
		}
	}
	fmt.Println(peer.Name, "admitted", admitted, "of 10 healthy calls")
	// Output:
	// failsafe-go-adaptivethrottler admitted 10 of 10 healthy calls
}
