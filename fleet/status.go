package fleet

import (
	"net/url"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// Status is what a replica knows of one breaker's fleet-wide state.
type Status struct {
	Breaker string
	// FleetWide is true while the breaker follows the fleet: it synced within
	// Config.LocalAfter. False means it decides alone (Redis unreachable, or not synced
	// yet): its state is local to this replica.
	FleetWide bool
	// State and Generation are the fleet's, as last read from Redis.
	State      breaker.State
	Generation uint64
	// ProbeHolder is true when this replica holds the fleet's probe lease.
	ProbeHolder bool
	// LastSync is when the breaker last synced successfully; zero if never.
	LastSync time.Time
	// The fleet's window at the last sync: the sum of every replica's window.
	Calls, Failures, SlowCalls int64
	// Error is the class of the error of the breaker's last sync (ClassTimeout,
	// ClassUnreachable, ClassAuth or ClassProtocol), or "" when it worked.
	Error string
}

// Status returns what this replica knows of the named breaker's fleet state, and
// false when no breaker of that name is attached.
func (f *Fleet) Status(name string) (Status, bool) {
	f.mu.Lock()
	m, ok := f.byName[name]
	f.mu.Unlock()
	if !ok {
		return Status{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.status
	// Past LocalAfter without a sync the breaker decides alone.
	s.FleetWide = !s.LastSync.IsZero() && time.Since(s.LastSync) < f.cfg.LocalAfter
	return s, true
}

// Stats counts the fleet's work since New. Read it for metrics: it is a plain struct
// so that this package needs no metrics library.
type Stats struct {
	// Syncs counts successful sync rounds (one pipelined round trip each).
	Syncs int64
	// Failures counts sync rounds that failed, or single breakers' scripts that failed
	// in a round where others succeeded (on a cluster, one node down). SyncErrors
	// splits it by class.
	Failures int64
	// Outages counts the times Redis became unreachable after answering: a Redis that
	// never answered since New (a wrong address, port or password) is no outage.
	Outages int64
	// Commands counts the Redis commands sent (script runs and loads).
	Commands int64
	// Published counts this replica's own transitions the fleet accepted; Lost those it
	// refused because another replica's came first (the fleet's state was applied).
	Published, Lost int64
	// Leases counts the probe leases this replica won.
	Leases int64
	// Breakers is the number of breakers attached.
	Breakers int
}

// Stats returns the fleet's counters.
func (f *Fleet) Stats() Stats {
	f.mu.Lock()
	n := len(f.members)
	f.mu.Unlock()
	return Stats{
		Syncs:     f.stats.syncs.Load(),
		Failures:  f.stats.failures.Load(),
		Outages:   f.stats.outages.Load(),
		Commands:  f.stats.commands.Load(),
		Published: f.stats.published.Load(),
		Lost:      f.stats.lost.Load(),
		Leases:    f.stats.leases.Load(),
		Breakers:  n,
	}
}

// keys returns a breaker's four keys:
// <prefix>:<app>:<policy version>:{<dependency>}:state|win|lease|hist. Every part is
// escaped, so no name can reach into another's keys; the dependency is the hash tag,
// so one breaker's keys share a Redis Cluster slot (the script touches all four).
func (f *Fleet) keys(b *breaker.Breaker) []string {
	base := f.KeyPrefix(b.Policy().Version, b.Name())
	return []string{base + "state", base + "win", base + "lease", base + "hist"}
}

// KeyPrefix returns the prefix of every key of the named dependency under this fleet's
// configuration and the given policy version, for operators and tests.
func (f *Fleet) KeyPrefix(policyVersion, name string) string {
	if policyVersion == "" {
		policyVersion = "_"
	}
	return escape(f.cfg.Prefix) + ":" + escape(f.cfg.App) + ":" + escape(policyVersion) + ":{" + escape(name) + "}:"
}

// escape percent-encodes everything but letters, digits and "-._~@", so ':' '{' '}'
// and spaces never appear raw in a key part.
func escape(s string) string {
	e := url.PathEscape(s)
	return strings.NewReplacer(":", "%3A", "{", "%7B", "}", "%7D", "+", "%2B", "=", "%3D", "$", "%24", "&", "%26", ",", "%2C", ";", "%3B", "!", "%21", "'", "%27", "(", "%28", ")", "%29", "*", "%2A", "/", "%2F").Replace(e)
}

// Scope returns "fleet" while the named breaker follows the fleet, "local" while it
// decides alone (Redis unreachable, or not synced yet), and "" when no breaker of that
// name is attached: the form an admin page shows next to the breaker's state.
func (f *Fleet) Scope(name string) string {
	s, ok := f.Status(name)
	switch {
	case !ok:
		return ""
	case s.FleetWide:
		return "fleet"
	}
	return "local"
}

// ScopeError returns the class of the error that keeps the named breaker local
// (ClassTimeout, ClassUnreachable, ClassAuth or ClassProtocol), or "" while it follows
// the fleet, before its first sync, or when no breaker of that name is attached: what
// an admin page shows next to "local". *Fleet thereby satisfies admin.ScopeErrors.
func (f *Fleet) ScopeError(name string) string {
	s, ok := f.Status(name)
	if !ok || s.FleetWide {
		return ""
	}
	return s.Error
}
