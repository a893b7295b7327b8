// Package admission decides what happens to new work while a dependency's breaker is
// open, instead of letting every caller find out by failing.
//
// [Controller.Admit] answers each piece of [Work]:
//
//   - a step that needs no dependency, or whose dependency is available, goes ahead
//     (an open breaker whose cooldown is over counts as available: that call may be
//     the probe that closes it);
//   - reads, low-priority work and work that cannot wait are rejected with a visible
//     reason ([Decision.Message] gives it in words for the model);
//   - work that may wait is queued durably in the journal, always with an expiry,
//     unless it would expire before the dependency can even be tried again.
//
// When the breaker closes ([Controller.OnStateChange], registered as a breaker
// listener, wakes [Controller.Run]), and at start-up and on every sweep for each
// dependency whose breaker is closed (a restarted process's breakers start closed, so
// no transition would wake the queue it inherited), the dependency's queue is
// replayed in priority order, older first, at most Config.ReplayRate items per
// second, and only while the breaker stays closed. Work whose idempotency key has an
// unsettled intent in the journal (an earlier attempt with an unknown outcome) is
// neither queued nor replayed automatically. Items whose expiry passed are dropped and reported through
// Config.OnEvent, never silently. Replays are claimed in the journal first, so several
// processes can share one PostgreSQL queue.
//
// For adk-go, the tool answer for queued work is [Decision.Message]: "Queued until
// 15:04 UTC, will run when crm recovers; ...". Wiring it into a tool callback is the
// callbacks package's job.
//
// # Concurrency
//
// A Controller is safe for concurrent use. Run one Run loop per process. Hooks are
// called outside any lock.
package admission
