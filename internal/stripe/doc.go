// Package stripe picks which of a set of striped counters a caller writes, so that
// callers on different cores write different cache lines. The breaker's success window
// and the adaptive limit's counters both stripe this way.
package stripe
