package metrics

import (
	"iter"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// What the exporters read at collection time, declared once: telemetry and
// otelmetrics export these as aliases (telemetry.BreakerSource, ...), so one value
// feeds both paths. Implementations must be safe for concurrent use, and must not
// block on the network: scrapes and log records read them while calls run.

// BreakerSource lists breakers whose state is read at collection time and looks one
// up by name. *dependencymap.Map implements it.
type BreakerSource interface {
	// Breakers returns every breaker, sorted by name.
	Breakers() []*breaker.Breaker
	// Get returns the breaker of a dependency key or model key.
	Get(key string) (*breaker.Breaker, bool)
}

// ThrottleSource lists the throttles whose state is read at collection time.
// *dependencymap.Map implements it.
type ThrottleSource interface {
	// Throttles returns every throttle, sorted by name.
	Throttles() []*throttle.Throttle
}

// LimitSource lists the adaptive concurrency limits whose state is read at
// collection time. *dependencymap.Map implements it.
type LimitSource interface {
	// Limiters returns every adaptive limit, sorted by name.
	Limiters() []*adaptivelimit.Limiter
}

// FleetSource is what fleet mode (package fleet) shows at collection time, through
// this interface so that the exporters do not import a Redis client: *fleet.Fleet
// implements it.
type FleetSource interface {
	// Scope returns "fleet" while the named breaker follows the fleet, "local" while
	// it decides alone (Redis unreachable, or not synced yet) and "" when no breaker
	// of that name is attached.
	Scope(dependency string) string
	// Counters returns the fleet's counters since it started: successful sync
	// rounds, failed ones, Redis outages (the first failed sync of each) and Redis
	// commands sent.
	Counters() (syncs, failures, outages, commands int64)
}

// FleetErrorSource is implemented by a FleetSource that classifies its failed syncs
// (*fleet.Fleet does): agentbreaker_fleet_sync_errors_total then has an error label
// per class ("auth", "protocol", "unreachable", "timeout"), so that an alert or a
// dashboard tells wrong credentials from a network fault. SyncErrors yields each
// class with its count since the source started; at most FleetErrorClasses of them
// are exported.
type FleetErrorSource interface {
	SyncErrors() iter.Seq2[string, int64]
}
