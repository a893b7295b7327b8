// Package agentbreaker keeps AI agents built on adk-go (google.golang.org/adk/v2)
// answering when the tools and models they depend on fail: circuit breakers keyed by
// dependency, answers the model can reason about instead of errors, a loop guard,
// model failover, and side effects that are never replayed blindly.
//
// This package holds only what every other one shares, [ConfigError]. The library is in
// its sub-packages; import the ones you use, and pay for nothing else (drivers, Redis,
// Prometheus and plotting live in packages of their own).
//
// # Core: how a breaker decides
//
//   - breaker: the lock-free circuit breaker, one per dependency; Policy, Permit.
//   - classify: what one finished call means (four outcomes, a class, a verdict).
//   - dependencymap: which breaker guards a tool, a host or a model endpoint;
//     dependencymap/depfile loads it from YAML or JSON.
//   - clock: the injected time source every state machine runs on.
//   - probe: a dependency's own health check, run while its breaker refuses calls.
//   - throttle: client-side throttling that sheds a share of calls in a partial outage.
//
// # adk-go integration: the plugin and what the model reads
//
//   - callbacks: the plugin; every tool call goes through its dependency's breaker.
//   - payloads: the answers the model gets in place of a failed or refused call.
//   - docstrings: the sentence added to guarded tools' descriptions.
//   - loopguard: stops a model from looping on an unavailable tool.
//   - modelfailover: routes model calls across endpoints and regions, loudly.
//   - mcpguard: an MCP server's tool set as one dependency, listing through the breaker,
//     a mutation sent at most once.
//   - bulkhead, tooltimeout: caps on concurrent calls and on time per call and turn.
//   - redact: what of a dependency's text may reach the model, logs and operators.
//
// # Side effects: retries, the journal, queued work
//
//   - retry: one budget per logical operation, so retries cannot multiply load.
//   - journal (journal/sqlite, journal/postgres): durable dispatch intents, so a crash
//     or a timeout cannot hide whether a mutation was applied.
//   - admission: what happens to new work while a breaker is open (queue with expiry).
//   - httptransport: an http.RoundTripper that knows whether a request was sent, and
//     sends the operation's idempotency key.
//
// # Operations
//
//   - telemetry (telemetry/observe): Prometheus metrics, slog records, span attributes.
//   - admin: an http.Handler showing breakers, routes and the journal, with overrides.
//   - fleet: one breaker per dependency for all replicas, through Redis.
//   - deploy: alert rules with promtool tests, a Grafana dashboard, the runbook.
//   - cmd/agentbreaker (over internal/sim): replay an outage in virtual time, replay
//     production records, lint dependency and timeout files.
//
// # Testing your agent
//
//   - breakertest: the real adk-go runner with a scripted model, failing HTTP servers
//     and tools; breakertest/geminifake: a local Gemini endpoint for the real genai
//     client.
//
// Start with the README and examples/agent; each topic has a page under docs/.
package agentbreaker
