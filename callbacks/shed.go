package callbacks

import (
	"errors"
	"log/slog"
	"slices"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// PriorityStateKey is the session-state key that overrides, for a whole invocation,
// the priority the dependency map gives each tool: a string, "low", "normal", "high"
// or "critical" (any scope prefix the application chooses is its own; this exact key
// is read). A priority set on the run's context with throttle.WithPriority wins over it.
const PriorityStateKey = "agentbreaker.priority"

// priorityOf is a call's priority: the context's, else the session state's, else the
// dependency map's for the tool. Read only while the throttle is shedding, so healthy
// calls never pay for the lookups.
func (c *Callbacks) priorityOf(ctx agent.Context, fromMap throttle.Priority) throttle.Priority {
	if p, ok := throttle.PriorityFrom(ctx); ok && p.Valid() {
		return p.Norm()
	}
	if st := ctx.State(); st != nil {
		if v, err := st.Get(PriorityStateKey); err == nil {
			if s, ok := v.(string); ok {
				if p, err := throttle.ParsePriority(s); err == nil {
					return p
				}
				c.log.Warn("agentbreaker: session state holds an unknown priority; the tool's own is used",
					slog.String("key", PriorityStateKey), slog.String("value", truncateValue(s)))
			}
		}
	}
	return fromMap.Norm()
}

func truncateValue(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// drawOf is an invocation's draw for the throttles: a hash of its ID (FNV-1a, then a
// finalizer that spreads it over all 64 bits). One draw for all of an invocation's calls
// means a throttle sheds whole turns: a turn that gets half of its data is worth about
// as little to its user as one that gets none, and the share shed stays the same.
func drawOf(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// served reports whether dep already accepted a call of inv. Such a turn is let
// finish: its later calls to dep count as Critical, so the dependency's capacity goes
// to whole turns rather than to halves of many.
func (inv *invocation) served(dep string) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return slices.Contains(inv.servedDeps, dep)
}

// markServed records that dep accepted a call of inv.
func (inv *invocation) markServed(dep string) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if !slices.Contains(inv.servedDeps, dep) {
		inv.servedDeps = append(inv.servedDeps, dep)
	}
}

// throttleRefused counts a call an open or half-open breaker refused as a request
// the dependency did not accept, so that the throttle remembers the outage when the
// breaker closes: it lets traffic back in as calls are accepted again instead of all at
// once. A forced-open breaker is the operator's and is not counted.
func (c *Callbacks) throttleRefused(tool string, err error) {
	th := c.deps.ThrottleFor(tool).Throttle
	if th == nil {
		return
	}
	var oe *breaker.OpenError
	if errors.As(err, &oe) && oe.State == breaker.ForcedOpen {
		return
	}
	th.Refused()
}

// shed answers a call the throttle held back: the dependency is partly overloaded and
// this call was not sent. It counts toward the loop guard like a short-circuit, so a
// model that keeps re-issuing shed calls gets the firm answer, and a delay the
// dependency stated is passed on. The payload's words follow the share the throttle
// is shedding now, read from its window (a cold path: the call is not sent).
func (c *Callbacks) shed(ctx agent.Context, inv *invocation, tool, dep string, b *breaker.Breaker, th *throttle.Throttle, pr throttle.Priority, args map[string]any) map[string]any {
	class, _ := c.path.Failed(dep)
	told := c.refuse(ctx, inv, tool, dep, b, callpath.Refusal{Control: callpath.Shed, Class: class, State: breaker.Closed, Priority: pr})
	in := c.payloadInfo(ctx, tool, dep, args)
	in.Firm, in.ShortCircuits = told.Firm, told.Count
	in.RetryAfter = b.RetryAfter()
	in.Shed = th.Probability()
	return payloads.Shed(in)
}
