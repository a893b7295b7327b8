// Package hops runs the first design document's compounding case through adk-go's
// real runner, in each shape adk-go offers for reaching a tool: the tool client
// retries three times, two callers use that tool, and the caller above them tries
// three times, so a dead dependency gets 3 × 2 × 3 = 18 requests for one user turn
// without agentbreaker. The CRM is a local HTTP server that counts the requests that
// reach it and answers 503 throughout; time is a fake clock, one turn a second.
//
// The shapes are plain tools (the root model calls two tools of the CRM and re-issues
// each),
// agent tools (two sub-agents each call the tool; the root model re-issues each) and a
// workflow (two tool nodes in a chain, each retried by adk-go's scheduler). A2A
// remote agents are added as a fourth shape by the package that guards them (see
// Shapes).
//
// It is internal: the figures it prints on docs/tools.md come from
// examples/hops, and its test holds them to the goals of issue 33.
package hops
