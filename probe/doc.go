// Package probe runs a cheap, read-only health check per dependency while the
// dependency's breaker refuses calls, so that recovery does not wait for traffic and
// no user's call (least of all a mutation) is ever the probe.
//
// For the probes a dependency map names (dependencymap.Dependency.Probe), one call
// builds the prober and starts it:
//
//	prober, err := probe.Start(ctx, deps, probe.Config{Logger: logger})
//	defer prober.Close()
//
// (FromMap builds it without starting it, for a caller that drives ProbeDue or Run
// itself.) A Prober attaches to each Check's breaker at New. From then on:
//
//   - half-open is decided by probes alone: while the breaker is open or half-open,
//     every user call is answered locally (callbacks answer it unavailable, or queue
//     it for a tool that may wait);
//   - the prober probes when the open period ends: every Policy.Cooldown without
//     growth, or every Config.MaxInterval when that is shorter, each period stretched
//     by the breaker's Policy.Jitter, and never before a delay the dependency stated
//     (Retry-After); a breaker that is idle closes at the first healthy probe after
//     its dependency recovered;
//   - the probe takes the breaker's probe permit through the same lock and leases as
//     a user probe (and, in fleet mode, the fleet's probe lease), so exactly one
//     probe is out;
//   - a probe that panics, hangs past its Timeout or answers neither healthy nor
//     failing is a failed probe with one log record; a check that ignores its
//     context is not started again until it returns.
//
// A Func is any check: HTTPGet builds one for a health URL; a model route's minimal
// request (modelfailover.ProbeFunc) and an MCP ping or read-only tool are Funcs too.
// A prober that stops asking for probes (Run returned, Close was not called) hands
// probing back to user calls after one interval and one ProbeLease.
//
// docs/probes.md explains the rules and the choice of cadence.
package probe
