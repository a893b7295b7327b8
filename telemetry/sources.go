package telemetry

import "github.com/agentbreaker/agentbreaker/telemetry/internal/metrics"

// BreakerSource lists breakers whose state is read at scrape time (Breakers, sorted
// by name) and looks one up by dependency or model key (Get). *dependencymap.Map
// implements it. It must be safe for concurrent use: scrapes and log records read it
// while calls run.
type BreakerSource = metrics.BreakerSource

// ThrottleSource lists the throttles whose state is read at scrape time (Throttles,
// sorted by name). *dependencymap.Map implements it.
type ThrottleSource = metrics.ThrottleSource

// LimitSource lists the adaptive concurrency limits whose state is read at scrape
// time (Limiters, sorted by name). *dependencymap.Map implements it.
type LimitSource = metrics.LimitSource

// FleetSource is what the telemetry reads at scrape time from fleet mode, without
// importing a Redis client: Scope(dependency) is "fleet" while the breaker follows
// the fleet, "local" while it decides alone and "" when no breaker of that name is
// attached; Counters are its sync rounds, failed rounds, Redis outages and Redis
// commands since it started. *fleet.Fleet implements it. It must not block on the
// network.
type FleetSource = metrics.FleetSource

// FleetErrorSource is implemented by a FleetSource that classifies its failed syncs
// (*fleet.Fleet does): SyncErrors yields each class ("auth", "protocol",
// "unreachable", "timeout") with its count, exported as
// agentbreaker_fleet_sync_errors_total{error}, at most FleetErrorClasses of them.
type FleetErrorSource = metrics.FleetErrorSource

// FleetErrorClasses bounds the rows of agentbreaker_fleet_sync_errors_total.
const FleetErrorClasses = metrics.FleetErrorClasses

// FleetSeries is how many series a watched fleet adds to Config.SeriesBound beyond the
// budget: its four counters, the dependency="other" row of agentbreaker_fleet_local and
// the FleetErrorClasses rows of agentbreaker_fleet_sync_errors_total. The per-breaker
// rows of agentbreaker_fleet_local are charged to Config.MaxSeries.
const FleetSeries = metrics.FleetSeries
