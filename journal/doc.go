// Package journal keeps a durable record of side-effecting calls, so that a crash or a
// timeout cannot hide whether the world saw a request.
//
// # Intents
//
// Before a call with side effects is sent, its intent is made durable with
// [Journal.Intend]: request id, idempotency key, dependency, tool, a keyed hash of the
// arguments (the arguments themselves only with Config.StoreArguments, since they may
// hold personal data), attempt number, creation time and policy version, sealed with a
// checksum that every read verifies.
//
// # What a reader of the database sees
//
// The argument hash is an HMAC-SHA-256 under the journal's secret (Config.HashKey, or
// the key in Config.KeyFile: for SQLite a file beside the database, created with a
// random key on first use, mode 0600), so nobody who can read the database but not
// the key can test guesses against it (a four-digit PIN would otherwise fall in 10,000
// hashes). Queued payloads are sealed with AES-256-GCM under a key derived from the
// same secret and bound to their item's id. PostgreSQL has no default key: the
// processes sharing it must share one, kept outside the database. After the call, [Journal.Finish] records its
// outcome. A crash between the two leaves the intent open, and the next process finds
// it.
//
// Concurrent intents are group-committed: one committer takes every write waiting
// and commits them in one transaction, so a hundred tools writing at once share syncs
// instead of queueing for one each. A commit whose acknowledgement is lost (the
// connection dropped after the server committed) is recognised, so no write is
// applied twice.
//
// # Reconciliation
//
// [Journal.Reconcile] (after a restart, or periodically) and [Journal.ReconcileIntent]
// (right after an UNKNOWN outcome) settle intents left without a final outcome: the
// dependency's [StatusLookup] says applied or not applied. Every journal holds an
// owner lease while it is open (on PostgreSQL a session advisory lock, released by the
// server when the process's connection ends, at once for a killed process), so
// Reconcile settles a dead process's open intents on its first run and lists those of
// live processes, with why, in Report.Skipped. A row that fails its checks is
// reported (Report.Corrupt, [CorruptError]) and does not stop the others. What no lookup can settle
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
