package callbacks

import (
	"time"

	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// DefaultBulkheadSlowCall is how long a call must have been running to count as slow
// for Config.Bulkheads.SlowCall when neither the breaker policy nor the tool says.
const DefaultBulkheadSlowCall = time.Second

// timeoutTool is a tool with a per-call timeout, such as a tooltimeout.Tool.
type timeoutTool interface {
	Timeout() time.Duration
}

// bulkheadSlowCall returns the age from which a call holding one of dep's bulkhead
// slots is slow (see Config.Bulkheads.SlowCall).
func (c *Callbacks) bulkheadSlowCall(b *breaker.Breaker, t tool.Tool) time.Duration {
	if d := c.cfg.Bulkheads.SlowCall; d > 0 {
		return d
	}
	if d := b.Policy().SlowCallThreshold; d > 0 {
		return d
	}
	if tt, ok := t.(timeoutTool); ok {
		if d := tt.Timeout(); d > 0 {
			return d / 2
		}
	}
	return DefaultBulkheadSlowCall
}

// heldBySlowCalls reports whether at least half of the limit slots of dep's bulkhead
// are held by calls that have been running for the slow-call age or longer. It scans
// the calls in flight, which only a rejection pays for.
func (c *Callbacks) heldBySlowCalls(dep string, b *breaker.Breaker, t tool.Tool, limit int) bool {
	slowAfter := int64(c.bulkheadSlowCall(b, t))
	now := c.nanos()
	slow := 0
	c.invs.each(func(inv *invocation) bool {
		inv.mu.Lock()
		for _, e := range inv.calls {
			if cl := e.cl; cl.dep == dep && cl.bulk != nil && now-cl.start >= slowAfter {
				slow++
			}
		}
		inv.mu.Unlock()
		return 2*slow < limit
	})
	return 2*slow >= limit
}
