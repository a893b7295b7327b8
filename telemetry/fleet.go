package telemetry

import (
	"iter"
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
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
const FleetErrorClasses = 4

// FleetSeries is how many series a watched fleet adds to Config.SeriesBound beyond the
// budget: its four counters, the dependency="other" row of agentbreaker_fleet_local and
// the FleetErrorClasses rows of agentbreaker_fleet_sync_errors_total. The per-breaker
// rows of agentbreaker_fleet_local are charged to Config.MaxSeries.
const FleetSeries = 4 + 1 + FleetErrorClasses

// Fleet metric names. Like the others, they are part of the package's contract.
const (
	nameFleetSyncs         = "agentbreaker_fleet_syncs_total"
	nameFleetSyncFailures  = "agentbreaker_fleet_sync_failures_total"
	nameFleetOutages       = "agentbreaker_fleet_outages_total"
	nameFleetRedisCommands = "agentbreaker_fleet_redis_commands_total"
	nameFleetLocal         = "agentbreaker_fleet_local"
	nameFleetSyncErrors    = "agentbreaker_fleet_sync_errors_total"
)

// scopeFleet is the value of FleetSource.Scope for a breaker that follows the fleet.
const scopeFleet = "fleet"

var (
	descFleetSyncs = prometheus.NewDesc(nameFleetSyncs,
		"Successful fleet sync rounds with Redis (one pipelined round trip each).", nil, nil)
	descFleetSyncFailures = prometheus.NewDesc(nameFleetSyncFailures,
		"Fleet sync rounds (or single breakers' scripts) that failed: Redis down, slow or partitioned.", nil, nil)
	descFleetOutages = prometheus.NewDesc(nameFleetOutages,
		"Times the fleet lost Redis (the first failed sync of each outage): during an outage the replica's breakers decide alone after LocalAfter.", nil, nil)
	descFleetSyncErrors = prometheus.NewDesc(nameFleetSyncErrors,
		"Failed fleet syncs by the class of their error: auth (credentials refused: check the password and ACL user), protocol (the server at the address is not a Redis that runs scripts), unreachable (no connection, or no master for the key), timeout (no answer within OpTimeout). They sum to agentbreaker_fleet_sync_failures_total.",
		[]string{"error"}, nil)
	descFleetRedisCommands = prometheus.NewDesc(nameFleetRedisCommands,
		"Redis commands the fleet sent (script runs and loads).", nil, nil)
	descFleetLocal = prometheus.NewDesc(nameFleetLocal,
		"1 while a breaker attached to the fleet decides alone on this replica (Redis unreachable, or not synced yet), 0 while it follows the fleet; for dependency=\"other\", the number of folded breakers deciding alone.",
		dep, nil)
)

// fleetDescs are described with the others whether or not a fleet is watched.
var fleetDescs = []*prometheus.Desc{descFleetSyncs, descFleetSyncFailures, descFleetOutages, descFleetRedisCommands, descFleetLocal, descFleetSyncErrors}

// WatchFleet reads src at every scrape: its counters, and the scope of every watched
// breaker it has attached. A later call replaces the source; nil stops the fleet
// metrics. It is safe to call at any time. Config.Fleet does the same at construction.
func (t *Telemetry) WatchFleet(src FleetSource) {
	if t == nil {
		return
	}
	if src == nil {
		t.fleet.Store(nil)
		return
	}
	t.fleet.Store(&src)
}

// collectFleet exports the fleet's counters and, for every breaker the scrape read
// (admitted under its own label, or folded into "other"), whether it decides alone.
// A breaker's row costs one series of the budget the first time; past it the breaker
// counts in the "other" row.
func (t *Telemetry) collectFleet(ch chan<- prometheus.Metric, byLabel map[string]*breaker.Breaker, folded []*breaker.Breaker) {
	p := t.fleet.Load()
	if p == nil {
		return
	}
	src := *p
	syncs, failures, outages, commands := src.Counters()
	ch <- prometheus.MustNewConstMetric(descFleetSyncs, prometheus.CounterValue, float64(syncs))
	ch <- prometheus.MustNewConstMetric(descFleetSyncFailures, prometheus.CounterValue, float64(failures))
	ch <- prometheus.MustNewConstMetric(descFleetOutages, prometheus.CounterValue, float64(outages))
	ch <- prometheus.MustNewConstMetric(descFleetRedisCommands, prometheus.CounterValue, float64(commands))
	if es, ok := src.(FleetErrorSource); ok {
		for _, r := range bound.SyncErrorRows(es.SyncErrors(), FleetErrorClasses) {
			ch <- prometheus.MustNewConstMetric(descFleetSyncErrors, prometheus.CounterValue, r.Count, r.Class)
		}
	}

	otherLocal, otherAttached := 0, false
	foldedOne := func(scope string) {
		if scope == "" {
			return
		}
		otherAttached = true
		if scope != scopeFleet {
			otherLocal++
		}
	}
	// In label order, so that which rows the budget admits does not depend on map order.
	for _, label := range slices.Sorted(maps.Keys(byLabel)) {
		b := byLabel[label]
		scope := src.Scope(b.Name())
		if scope == "" {
			continue // not attached to the fleet: no row
		}
		if !t.budget.tryAdmit(seriesKey{fam: famBreaker, labels: [4]string{label, nameFleetLocal}}, 1) {
			foldedOne(scope)
			continue
		}
		v := 1.0 // "local", or anything but "fleet": the breaker does not follow the fleet
		if scope == scopeFleet {
			v = 0
		}
		ch <- prometheus.MustNewConstMetric(descFleetLocal, prometheus.GaugeValue, v, label)
	}
	for _, b := range folded {
		foldedOne(src.Scope(b.Name()))
	}
	if otherAttached {
		ch <- prometheus.MustNewConstMetric(descFleetLocal, prometheus.GaugeValue, float64(otherLocal), otherLabel)
	}
}
