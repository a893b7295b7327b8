// Package conformance is agentbreaker's failure-injection conformance suite: one
// test per failure case of the second design document ("Your AI Agent Needs a
// Circuit Breaker, Not Just Retries"), each run end to end through adk-go's real
// runner with a scripted model, the agentbreaker plugin set up as the README's quick
// start does, a dispatch-intent journal and an admission queue, against local servers
// that count every request they receive.
//
// Every case asserts five things: the final outcome the model saw (the function
// response), the number of remote attempts the server counted, the breaker state, the
// queue state and the audit record (journal rows and the slog JSON call records), and
// one invariant: no automatic retry of an UNKNOWN side effect unless the operation is
// idempotent or reconciliation proved it was not applied. The expected results come
// from the README, the package documentation and the design document, not from the
// implementation. docs/conformance.md lists the cases and the figures each asserts.
//
// Run it with
//
//	cd test && go test -race -count=1 ./conformance/
//
// Time that decides anything runs on a fake clock; the tests never sleep.
package conformance
