// Package observe declares what agentbreaker's packages report about the calls they
// guard, without depending on any metrics or tracing backend.
//
// The tool callbacks, the model failover wrapper, the bulkhead, the retry budget and
// the journal accept an [Observer] (or one of its smaller parts: [Calls], [Models],
// [Journal]) and report to it. The telemetry package implements Observer with
// Prometheus collectors, log/slog records and OpenTelemetry span events; this package
// imports none of those, so the core packages stay free of them.
//
// An Observer's methods are called on the hot path from many goroutines at once (adk-go
// runs each tool call on its own goroutine): implementations must be safe for
// concurrent use, quick, and must not call back into the reporting package. [Nop]
// ignores everything and is the default of every package that takes an Observer.
//
// The context passed to the methods is the one the reporting code runs in: in an adk-go
// tool callback it is the agent.Context, which carries adk-go's "execute_tool" span and
// the invocation and function call IDs; in a model.LLM wrapper it carries the
// "generate_content" span. Implementations read both from it.
package observe
