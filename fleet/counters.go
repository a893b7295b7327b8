package fleet

// Counters returns the sync counters of Stats as plain values (successful sync rounds,
// failed ones, Redis outages, Redis commands sent), so that a metrics package can read
// them through an interface of its own without importing this package:
// *Fleet satisfies telemetry.FleetSource. It is safe for concurrent use and does not
// touch Redis.
func (f *Fleet) Counters() (syncs, failures, outages, commands int64) {
	return f.stats.syncs.Load(), f.stats.failures.Load(), f.stats.outages.Load(), f.stats.commands.Load()
}
