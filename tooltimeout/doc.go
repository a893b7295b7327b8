// Package tooltimeout bounds how long one tool call and one whole turn may take, and
// checks at construction that the nested budgets fit inside each other.
//
// A breaker cannot trip on a call that never returns: a timeout turns a hang into a
// failure it can count. adk-go gives tool callbacks no way to change the context a tool
// runs with, so the per-tool timeout is a wrapper ([Wrap]) whose context carries the
// deadline. A call that runs out of time returns a [*TimeoutError] (class timeout,
// outcome UNKNOWN, counted by the breaker) at the deadline, even when the tool ignores
// its context; a panicking tool returns a [*PanicError] instead of killing the process.
// The wrapper runs the inner tool's own request processing and makes sure adk-go
// dispatches calls to the wrapper.
//
// Timeouts nest: tool timeout × attempts + backoff must fit in the sub-agent's budget,
// which must fit in the turn's. [Layers] checks that and reports the arithmetic when it
// does not hold, so a misconfiguration fails at start-up instead of showing up as
// "every incident looks like the turn timed out".
//
// The whole-turn limit is not an agent setting: [Turn] enforces it where the runner is
// invoked, drains the run so adk-go finishes its bookkeeping, and answers any function
// call left without a response ([CloseOrphans]). [NewTurn] checks the timeouts of the
// agent's tools, and of its tool sets whose tools are listed only when a turn starts
// ([BoundedToolset], such as an MCP tool set guarded by mcpguard), against it.
//
// Every exported type is safe for concurrent use.
package tooltimeout
