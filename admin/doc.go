// Package admin is an http.Handler that shows the state of an agent's breakers,
// bulkheads, model routes and journal, and lets an operator act on them.
//
// # Mounting
//
//	deps := dependencymap.MustNew(dependencymap.Config{ /* ... */ })
//	h := admin.MustNew(admin.Config{
//		Token:     os.Getenv("AGENTBREAKER_ADMIN_TOKEN"),
//		Breakers:  deps, // with a History of its own, fed by the map
//		Bulkheads: admin.BulkheadGroup(cb.Bulkheads()), // cb is the *callbacks.Callbacks
//	})
//	mux.Handle("/ops/breakers/", http.StripPrefix("/ops/breakers", h))
//
// # The page
//
// The page reloads the state every Config.Refresh (5 s by default) until the operator
// pauses it. Breakers that refuse calls come first, longest open first, each with how
// long it has been refusing calls (failed probes do not restart that clock) and, with a
// History (made by New for a dependency map), its last transitions with their times,
// causes and reasons. Bulkheads, model
// routes and the journal are shown only when configured. Every name and reason is
// shown as text, never as markup: a model can invent a tool name.
//
// Set Journal to admin.JournalOf(j) for a dispatch-intent journal (*journal.Journal):
// the journal endpoints then list the intents no status lookup could settle, with a
// summary that never shows their arguments, and approve or discard them.
//
// # Fleet mode
//
// With fleet mode (package fleet), set Scopes to the *fleet.Fleet the breakers are
// attached to (admin reads it through the small [Scopes] interface and does not import
// a Redis client). Each breaker in the state document then carries "scope": "fleet"
// while its state is shared by every replica, "local" while this replica decides alone
// (Redis unreachable, or not synced yet); the page shows it as a badge next to the
// state. Force open, force closed and reset on an attached breaker apply to every
// replica: the fleet publishes the operator's action at its next sync, at once. On a
// local breaker they apply here at once and reach the fleet when Redis answers again,
// unless the fleet's state moved on meanwhile. Each replica serves its own admin page,
// so any one of them can act for the fleet.
//
// Mount it on an internal listener, not the one that serves users, and behind TLS: the
// token travels in a header on every request.
//
// # Endpoints
//
// Paths are relative to where the handler is mounted.
//
//	GET  /                              the HTML page (a static shell; it asks for the token)
//	GET  /api/state                     breakers, bulkheads and model routes, as JSON
//	POST /api/breakers/{name}/{action}  action: force-open, force-closed or reset
//	GET  /api/journal                   intents awaiting reconciliation
//	POST /api/journal/{id}/{action}     action: approve or discard
//
// A POST may carry a JSON body {"reason": "..."}; the reason ends up in the breaker's
// transition event and in the log.
//
// # Security
//
// Secure by default, with nothing to switch on:
//
//   - Every request except the page shell needs "Authorization: Bearer <token>". The
//     token is compared in constant time; New refuses an empty, short or guessable one
//     (fewer than 8 distinct characters or 64 bits of estimated
//     entropy: sixteen copies of one character are refused), and there is no default. The shell holds no state and no secret: the page sends the token
//     the operator types with each of its requests and keeps it only in memory.
//   - State changes are POST only. Cross-origin browser requests are rejected (by the
//     Sec-Fetch-Site and Origin headers, see http.CrossOriginProtection), and a POST must
//     say Content-Type: application/json, which an HTML form cannot send. This matters
//     when a proxy in front adds the Authorization header for signed-in operators:
//     then a foreign page could otherwise make their browser post.
//   - Request bodies are capped (Config.MaxBodyBytes); every response carries HSTS
//     (Strict-Transport-Security, two years, subdomains), is not cached, sniffed or
//     framed, sends no referrer, is isolated from other origins (COOP, CORP) and denies
//     browser features (Permissions-Policy); the page runs under a strict
//     Content-Security-Policy that allows only its own script and style by hash.
//   - Every action is logged with the operator's address and reason. Breaker actions go
//     through the breaker's ForceOpen, ForceClosed and Reset, so they are also
//     transitions with cause "operator" for every listener (the telemetry package
//     counts them).
package admin
