// Package loopguard stops an agent from looping on a tool whose breaker is open.
//
// An open breaker answers in microseconds, and a model that believes the call matters
// will simply call again, step after step, burning tokens and latency on calls that
// are certain to short-circuit. The guard adds three defences on top of the payload:
//
//   - it counts short-circuits per invocation and dependency; from FirmAfter on, the
//     payload turns firm and tells the model to answer without the tool now;
//   - optionally ([Guard.Filter]) it removes the tools of dependencies that refuse
//     calls now from the model's tool list, and offers them again as soon as a probe
//     may go, so that a dependency is never cut off for good;
//   - it caps the model calls an invocation may make after its first short-circuit,
//     ending the turn with a plain answer ([Guard.CapResponse]) instead of looping.
//
// Counters live in a [Tracker] kept by the caller for one invocation (agentbreaker's
// callbacks keep one per invocation and free it when the run ends). They are not kept
// in session state, where parallel tool calls doing read-modify-write lose updates;
// the callbacks only mirror the counts into "temp:" keys ([Guard.StateKey]) so they are
// visible to other callbacks and in event state deltas. They write the mirror once per
// model call, from the before-model callback, after the previous step's calls have all
// ended: adk-go merges the state deltas of parallel calls with the last call winning,
// so a count written by each call would end with one call's value.
//
// A Guard is immutable and a Tracker is safe for concurrent use.
package loopguard
