// Package agentbreaker holds what every package of the module shares: the one error
// type for invalid configuration. The library itself lives in the sub-packages:
// breaker (the circuit breaker), dependencymap (breakers keyed by dependency),
// callbacks (the adk-go plugin), classify, retry, modelfailover, telemetry, admin,
// journal and the rest; see the README.
package agentbreaker
