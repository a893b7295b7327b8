// Package mcpguard puts an MCP server's tools (adk-go's tool/mcptoolset) behind one
// agentbreaker dependency with one line:
//
//	ts, err := mcpguard.New(mcpguard.Config{
//		Dependency: "payments",
//		Callbacks:  cb, // the agentbreaker plugin registered with the runner
//		Toolset:    mcptoolset.Config{Endpoint: "http://payments.internal/mcp"},
//	})
//
// The returned tool set goes where the mcptoolset would (llmagent.Config.Toolsets). It
// does what the plain tool set cannot:
//
//   - Every tool the server lists, at the first turn and whenever its list changes,
//     is bound to the dependency key in the plugin's dependency map
//     (dependencymap.Map.AddTools), so all of them share one breaker and trip
//     together, and the plugin guards their calls as it guards any tool.
//   - Listing goes through that breaker. adk-go lists a tool set's tools when a turn
//     starts and fails the whole run when listing fails; here a failed listing counts
//     against the dependency and the turn goes on. The model is offered the last list
//     that worked, and the plugin answers calls of those tools with its "unavailable"
//     payload while the breaker is open; while the breaker refuses calls, listing is
//     not attempted at all. With no list ever seen, the model is told in its system
//     instruction that the dependency's tools are unavailable.
//   - A call of a tool in the plugin's MutatingTools is written to the server at most
//     once. adk-go's connection refresher sends a call again, inside the same tool
//     call, when the connection closed after the first send (io.EOF); for a payment
//     that is a second charge. The guard sits at the MCP transport (the HTTP client of
//     a streamable transport, the connection of any other) and refuses a tools/call
//     write of a logical call while an earlier write of it is unanswered; the call
//     ends UNKNOWN, counted, and the plugin's mutating-tool rules apply (the
//     outcome-unknown payload, the journal). A send after an answer ("input
//     required", SEP-2322) goes through. A read-only call may be re-sent and is still
//     one call to the plugin.
//   - With the plugin's Retrier, such a call also carries its operation's idempotency
//     key to the server, in the request's _meta under IdempotencyKeyMeta: the key the
//     journal records. StatusLookup asks a read-only tool of the same server about a
//     key, so the journal can settle a mutation whose outcome was unknown.
//
// Over streamable HTTP, the HTTP status of the server's answers (or of a proxy in front
// of it) is read at the same HTTP client: 5xx, 429, 408 and 401/403/407 become an error
// that carries classify.HTTPStatus's classification and the Retry-After delay, as for an
// HTTP tool, instead of the SDK's text ("Service Unavailable"); a 503 is http_5xx and
// FAILED, another 5xx is UNKNOWN (a mutation then gets the outcome-unknown payload).
//
// Each tool call is also bounded by Config.Timeout (package tooltimeout), so a server
// that hangs turns into a counted failure instead of a held turn.
//
// A Toolset is safe for concurrent use.
package mcpguard
