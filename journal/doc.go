// Package journal keeps a durable record of side-effecting calls, so that a crash or a
// timeout cannot hide whether the world saw a request.
//
// # Intents
//
// Before a call with side effects is sent, its intent is made durable with
// [Journal.Intend]: request id, idempotency key, dependency, tool, a hash of the
// arguments (the arguments themselves only with Config.StoreArguments, since they may
// hold personal data), attempt number, creation time and policy version, sealed with a
// checksum that every read verifies. After the call, [Journal.Finish] records its
// outcome. A crash between the two leaves the intent open, and the next process finds
// it.
//
// Concurrent intents are group-committed: one committer takes every write waiting
// and commits them in one transaction, so a hundred tools writing at once share syncs
// instead of queueing for one each.
//
// # Reconciliation
//
// [Journal.Reconcile] (after a restart, or periodically) and [Journal.ReconcileIntent]
// (right after an UNKNOWN outcome) settle intents left without a final outcome: the
// dependency's [StatusLookup] says applied or not applied. What no lookup can settle
// waits for an operator: [Journal.Pending] lists it, [Journal.Approve] allows a
// replay, [Journal.Discard] closes it without one. Until then [Journal.Unresolved]
// reports the earlier attempt, and a mutation is not replayed.
//
// The retry package plugs in through [Journal.ForRetry] (intent before each attempt,
// outcome after) and [Journal.Reconciler] (reconciliation of UNKNOWN outcomes).
//
// # Backends
//
// One schema, two backends, each in a package of its own so that a program links
// only the driver it uses: journal/sqlite, an embedded file (pure Go, WAL mode,
// synchronous=FULL) for one process; and journal/postgres, for fleets sharing a
// database. The schema is versioned ([SchemaVersion]); Open applies missing
// migrations, each in one transaction, serialised between processes, and refuses
// tables written by a newer build. Config.Prefix names the tables, so several
// journals can share a database.
//
// The journal also stores the admission package's queue ([Journal.Enqueue] and
// friends), so queued work survives a restart too.
//
// # Concurrency
//
// A Journal is safe for concurrent use. Lookups are called without locks held.
package journal
