package telemetry

import (
	"iter"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// FleetSource is what the telemetry reads at scrape time from fleet mode (package
// fleet), through this interface so that this package does not import a Redis client:
// *fleet.Fleet implements it. Implementations must be safe for concurrent use and must
// not block on the network (scrapes call them).
type FleetSource interface {
	// Scope returns "fleet" while the named breaker follows the fleet, "local" while it
	// decides alone (Redis unreachable, or not synced yet) and "" when no breaker of
	// that name is attached.
	Scope(dependency string) string
	// Counters returns the fleet's counters since it started: successful sync rounds,
	// failed ones, Redis outages (the first failed sync of each) and Redis commands sent.
	Counters() (syncs, failures, outages, commands int64)
}

// FleetErrorSource is implemented by a FleetSource that classifies its failed syncs
// (*fleet.Fleet does): the telemetry then exports agentbreaker_fleet_sync_errors_total
// with an error label per class ("auth", "protocol", "unreachable", "timeout"), so that
// an alert or a dashboard tells wrong credentials from a network fault. SyncErrors
// yields each class with its count since the source started; the telemetry exports at
// most FleetErrorClasses of them. It must not block on the network.
type FleetErrorSource interface {
	SyncErrors() iter.Seq2[string, int64]
}

// FleetErrorClasses bounds the rows of agentbreaker_fleet_sync_errors_total.
const FleetErrorClasses = metrics.FleetErrorClasses

// FleetSeries is how many series a watched fleet adds to Config.SeriesBound beyond the
// budget: its four counters, the dependency="other" row of agentbreaker_fleet_local and
// the FleetErrorClasses rows of agentbreaker_fleet_sync_errors_total. The per-breaker
// rows of agentbreaker_fleet_local are charged to Config.MaxSeries.
const FleetSeries = metrics.FleetSeries

// ThrottleSource lists the throttles whose state is read at scrape time.
// *dependencymap.Map implements it. Implementations must be safe for concurrent use.
type ThrottleSource interface {
	// Throttles returns every throttle, sorted by name.
	Throttles() []*throttle.Throttle
}

// LimitSource lists the adaptive concurrency limits whose state is read at scrape
// time. *dependencymap.Map implements it. Implementations must be safe for concurrent
// use.
type LimitSource interface {
	// Limiters returns every adaptive limit, sorted by name.
	Limiters() []*adaptivelimit.Limiter
}
