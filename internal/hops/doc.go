// Package hops runs the first design document's compounding case through adk-go's
// real runner, in each shape adk-go offers for reaching a tool: the tool client
// retries three times, two callers use that tool, and the caller above them tries
// three times, so a dead dependency gets 3 × 2 × 3 = 18 requests for one user turn
// without agentbreaker. The CRM is a local HTTP server that counts the requests that
// reach it and answers 503 throughout; time is a fake clock, one turn a second.
//
// The shapes are plain tools (the root model calls two tools of the CRM and re-issues
// each),
// agent tools (two sub-agents each call the tool; the root model re-issues each), A2A
// (the same two sub-agents as remote agents, each on its own A2A server that runs
// agentbreaker's plugin, guarded on the root's side with a2aguard and called as tools;
// the A2A servers count their requests too) and a workflow (two tool nodes in a chain,
// each retried by adk-go's scheduler).
//
// It is internal: the figures it prints on docs/tools.md come from
// examples/hops, and its test holds them to the goals of issue 33.
package hops
