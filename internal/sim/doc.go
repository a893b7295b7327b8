// Package sim replays a dependency outage in virtual time through agentbreaker's real
// breaker, callbacks plugin, bulkhead and retry code, and compares strategies side by
// side: no breaker with naive retries at every layer, a consecutive-failure breaker,
// agentbreaker with its defaults, and agentbreaker with the user's policy.
//
// The simulation is a discrete-event loop on a clock.Fake. Each tool call is admitted
// at the instant it starts (the callbacks plugin's before-tool callback, which asks the
// dependency's breaker and bulkhead), and its completion is an event at start+latency,
// where the clock is set and the outcome is reported through the plugin's on-error and
// after-tool callbacks. The tool timeout caps a call's latency and turns a hang into a
// counted failure. All randomness comes from a seeded generator, so the same Scenario
// gives the same Result, and a 15-minute incident with dozens of users runs in well
// under a second.
//
// RunPartial simulates a partial outage instead: the dependency handles at most a
// capacity and fails the load above it (ShapeCapacity), or fails a share of the calls
// at random whatever the load (ShapeLoadIndependent). The rows add agentbreaker's
// throttle (package throttle) alone and with the breaker, what a user could configure
// instead (the retry budget alone, a tolerant breaker, a larger K, a larger retry
// budget), and Peers that other modules plug in (sim/peers runs failsafe-go's adaptive
// throttler); docs/partial-outages.md shows the tables.
//
// RunCliff simulates a latency cliff instead (a dependency that serves a few calls at
// once and queues the rest, up to the tool timeout) with no limit, the fixed bulkhead
// and the adaptive concurrency limit (package adaptivelimit) through the real callbacks,
// and LimitPeers from other modules (sim/peers runs failsafe-go's adaptive limiter);
// RunHangIncident measures the worker time hanging calls block before the breaker
// trips, with and without the limit. docs/adaptive-concurrency.md shows both.
//
// Replay feeds recorded call records (agentbreaker's slog JSON records or a CSV) through
// the same real breaker to answer "with this policy, when would it have tripped, how
// many calls would have reached the dependency while it was down, and how often would
// it have tripped on a healthy dependency", and Sweep tries a grid of thresholds.
// Tune streams a file of records twice and replays a grid of policies at once, each
// outage held out in turn, to recommend a policy, a tool timeout and limit bounds per
// dependency (docs/tuning.md); Generate writes a month of records to try it on.
//
// Nothing in this package is safe for concurrent use unless its doc says so: a run owns
// its breakers, clock and generators.
package sim
