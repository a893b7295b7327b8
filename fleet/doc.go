// Package fleet shares circuit breakers across the replicas of one application through
// Redis: one breaker per dependency for the whole fleet, with Redis off the call path.
//
// Attach a breaker (or a whole dependencymap.Map with AttachMap) to a Fleet. Every call
// is still decided by the local breaker, lock-free and without allocating, exactly as
// without a fleet. One goroutine per Fleet syncs every SyncInterval, one pipelined round
// trip for all breakers, each running one Lua script that:
//
//   - publishes what this replica's breaker did since the last sync (a trip, a probe's
//     outcome, ForceOpen, ForceClosed or Reset) as a compare-and-set on the fleet's
//     generation number, so two replicas never open or close a breaker inconsistently;
//   - stores this replica's rolling window and sums every replica's, trips the fleet
//     when the sum crosses the breaker's own gates (MinimumCalls with
//     FailureRateThreshold or SlowCallRateThreshold), and floors the cooldown with any
//     delay a dependency stated (Retry-After);
//   - hands the probe lease (SET NX PX ProbeLease) to one replica that has a call
//     waiting once the cooldown is over: exactly one replica probes per cooldown, and a
//     replica that dies mid-probe frees the slot when its lease expires;
//   - returns the fleet's state, which the replica applies to its breaker: a state is
//     only ever learned from Redis, never from a message.
//
// Every replica therefore learns of a change within one SyncInterval (at once for the
// replica that made it). Each transition is appended to a Redis stream with its
// generation, so the fleet's history can be audited.
//
// When Redis is down, slow or partitioned, the sync fails after OpTimeout, the replica
// logs it once per outage and counts it in Stats; its breakers keep the fleet's last
// state for LocalAfter, then decide alone (Status and Scope report them as local).
// When Redis answers again they resynchronise at the next sync: what a breaker did
// alone meanwhile (a trip, an operator's action) is published if the fleet has not
// moved on, and the fleet's state is applied. Windows are
// stored as each replica's current totals, not as increments, so a sync that failed or
// was repeated can never count a call twice; a replica that stops syncing drops out of
// the fleet's window after three to six intervals.
//
// Config.Addr dials one Redis; Config.Client takes a go-redis client you built
// instead (redis.UniversalClient: standalone, Redis Cluster, a Sentinel failover
// client), which the fleet never closes. On a cluster every key of one breaker shares
// a hash tag, go-redis sends the round's pipeline to each master in parallel, and each
// breaker's script succeeds or fails on its own: while a master is down only its
// breakers decide alone, and after a failed script the fleet has the client reload
// its slot map so that a promoted replica takes over at the next round. A node without
// the script (restarted, or a replica just promoted) is sent its text in the same
// round.
//
// A failed sync is classified for the operator (ClassAuth, ClassProtocol,
// ClassUnreachable, ClassTimeout) in the log, in Status.Error, in ScopeError and by
// count in SyncErrors; Stats.Outages counts only the outages of a Redis that had
// answered.
//
// Keys are <Prefix>:<App>:<policy version>:{<dependency>}:state|win|lease|hist, every
// part escaped, every key expiring after KeyTTL without a sync.
package fleet
