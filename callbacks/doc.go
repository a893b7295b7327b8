// Package callbacks puts agentbreaker around every tool call of an adk-go agent: one
// plugin, registered once, and every call goes through its dependency's circuit
// breaker and bulkhead.
//
// # Installing
//
//	cb, err := callbacks.New(callbacks.Config{Dependencies: deps})
//	r, err := runner.New(runner.Config{
//		Agent: root, SessionService: sessions,
//		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{cb.Plugin(), others...}},
//	})
//
// Register the plugin first. adk-go stops at the first on-error callback that answers
// an error, so a plugin ahead of agentbreaker (adk-go's retry-and-reflect, for one)
// would hide failures from the breaker. agentbreaker records failures in its own
// on-error callback and never answers them itself (except for MutatingTools), so
// plugins after it still see every error.
//
// Tools inside an agenttool sub-agent run in a nested runner that does not see runner
// plugins. Build those agents with [Callbacks.Build] (or [Callbacks.Instrument] and
// [Callbacks.AgentTool]): the same callbacks then run at agent level there.
//
// Across that hop the nested runs' calls are operations of the outermost run (with
// Config.SideEffects.Retry): the same tool and arguments, called by two sub-agents or
// again when the root model re-issues a sub-agent, is one operation whose later
// attempts are retries, charged to the dependency's retry budget. An agent-tool call
// whose inner calls failed or were refused is FAILED (neutral to breakers) although the
// sub-agent answered in words, so its re-issue is a retry too. An agent tool listed
// under a dependency its own calls use never takes that dependency's half-open probe,
// holds no slot of its bulkhead and reports no outcome to its breaker, so it cannot
// close the breaker on a dead dependency. A workflow's tool nodes are guarded by
// package workflowguard, which asks [Callbacks.RetryRefused] before a node is retried.
//
// # What happens to one call
//
//   - Before: while a delay the dependency stated (Retry-After, RetryInfo, in-band
//     retry_after_seconds) has not passed, the call is answered locally with the
//     unavailable payload and the time left, even with the breaker closed; the delay
//     is kept per dependency, only moves later and is capped by the policy's
//     MaxRetryAfter (a breaker forced closed ignores it). Otherwise the tool's breaker
//     is asked for a permit. An open breaker answers with the unavailable payload
//     (package payloads) and the tool never runs; a full bulkhead answers with the
//     busy payload, and counts as a failure only when slow calls hold at least half
//     of its slots (Config.Bulkheads.SlowCall). adk-go's built-in tools are exempt.
//   - On error: the error is classified (package classify) with the call's own
//     context, so the turn's cancellation is neutral, and the outcome is recorded
//     before any later plugin can turn the error into a result.
//   - After: the outcome is reported to the breaker (healthy → success, counts →
//     failure, neutral → ignored) and the bulkhead slot is released. Results that
//     report failure in-band ({"status": "error"}, MCP isError) count like errors;
//     agentbreaker's own payloads never count.
//
// Calls are paired by their tool context's identity and function call ID, because
// model-supplied IDs can repeat within one response and the calls of one response run
// on separate goroutines. A call whose after-callback never runs (another plugin's
// after-callback answered first, or the run was cut short) is released when the run's
// state is freed, so every permit and slot is given back exactly once.
//
// # Retry budget and journal
//
// With Config.SideEffects.Retry, each guarded call is an attempt of a logical operation
// (retry.Retrier.Track, by tool name and arguments, per invocation): the model
// calling the same tool with the same arguments again is the next attempt of the
// same operation, not new work. After the breaker and the bulkhead admit a call, the
// operation is asked for its next attempt; a refusal answers the call with a payload
// and the tool never runs: an UNKNOWN outcome of a tool in MutatingTools gives the
// outcome-unknown payload ("do not repeat this action"), spent attempts, deadline or
// retry budget give the budget-exhausted payload, and an identical call still running
// gives the busy payload. Every admitted attempt is finished exactly once with the
// call's classification, on the same paths that release the breaker permit; a call
// stopped by a later plugin before its tool ran (a confirmation request) is not an
// attempt. The run's operations are forgotten when it ends. Tools outside
// MutatingTools are declared idempotent, so their UNKNOWN outcomes may be retried.
//
// With Config.SideEffects.Journal too (and the Retrier built with the journal's ForRetry), every
// attempt's intent is durable before its tool runs, and UNKNOWN outcomes are
// reconciled through the journal's status lookups. Wrap tools with
// [Callbacks.WithIdempotencyKey] so they run with the operation's idempotency key in
// their context; an HTTP client using the httptransport package sends it as a header.
//
// Config.SideEffects.ConfirmUnknownReplays puts a refused repeat of such a mutation to the user
// through adk-go's tool confirmation, with a hint that the earlier attempt may already
// have been applied. The turn pauses; when the user answers (a function response named
// adk_request_confirmation), adk-go runs the call again: confirmed, its unresolved
// intents are approved and it is sent with their idempotency key; declined, it gets
// the outcome-unknown payload and the intents wait for an operator.
//
// # Queueing while a dependency is down
//
// With Config.SideEffects.Admission and Config.SideEffects.QueueTools, a call of a listed tool that an open
// breaker refused (half-open with its probe out included) is offered to the admission
// controller. When it queues the call
// (durably, with the call's arguments and an expiry), the model is told "queued until
// HH:MM, will run when the service recovers" (payload type TypeQueued) instead of
// "unavailable"; when it does not, the call gets the unavailable payload as usual.
//
// # The model's side
//
// Before each model call the loop guard (package loopguard) may end the turn when the
// model keeps calling unavailable tools, and may hide the tools of dependencies that
// refuse calls now (Guidance.LoopGuard.HideOpenTools). Hidden tools are offered again as soon
// as a probe may go, and stay dispatchable: a call the model makes anyway still asks
// the breaker, and may be its probe. Guarded tools' descriptions get one sentence
// explaining the payload (package docstrings). Model
// callbacks of the model-failover package are bundled after these (Config.Model).
//
// # Observing
//
// Every decision is an [Event] for Config.Observability.OnEvent and a log record on Config.Observability.Logger
// with stable keys.
//
// # What a dependency's text can reach
//
// A guarded call that reached its tool and failed reaches the model only as
// agentbreaker's payload (payloads.Failed), built from the failure's class, whether the
// tool returned an error (which adk-go would otherwise send as {"error": err.Error()})
// or a result reporting failure in-band. The model's own mistakes (validation, not
// found, no results) keep the tool's message, cleaned and cut at 512 bytes per string.
// [ErrorText] states the rule; Config.Guidance.Redaction.ErrorText changes it per tool
// (ErrorTextBounded adds a masked excerpt, ErrorTextVerbatim turns it off).
//
// Log records and Events carry the class, the status code and a fingerprint of the
// text (its length and a short hash, package redact), never the text; an excerpt,
// bounded and with common secret shapes masked, only with a Config.Guidance.Redaction.Redactor
// built with redact.Config.Excerpt. Tool names that are not valid UTF-8, hold control
// characters or are absurdly long are repaired (redact.RepairName) before they key a
// breaker, a metric or a log line.
//
// For metrics and traces, set Config.Observability.Observer to a *telemetry.Telemetry (any
// observe.Calls will do): each short-circuit, each bulkhead rejection and, once per
// call that reached its tool, the call's outcome are reported with the call's tool
// context, so the decision also lands on adk-go's "execute_tool" span. Give the same
// Telemetry's BreakerEvent to the dependency map's OnStateChange and let it Watch the
// map, and the breakers' states and transitions are exported too.
package callbacks
