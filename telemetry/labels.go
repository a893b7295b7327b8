package telemetry

import (
	"log/slog"
	"sync"
	"sync/atomic"
)

// otherLabel replaces label values past the limit, and unknownLabel an empty value
// where one is required.
const (
	otherLabel   = "other"
	unknownLabel = "unknown"
)

// labelGuard bounds the distinct values of one label. The first max values pass; later
// ones become "other". It is safe for concurrent use; a value already seen costs one
// read-locked map lookup.
type labelGuard struct {
	name   string
	max    int
	log    *slog.Logger
	mu     sync.RWMutex
	seen   map[string]struct{}
	warned atomic.Bool
}

func newLabelGuard(name string, max int, log *slog.Logger) *labelGuard {
	return &labelGuard{name: name, max: max, log: log, seen: make(map[string]struct{})}
}

// value returns v, or "other" once the label holds max other values. v is sanitised
// first (sanitizeLabel): the Prometheus client refuses invalid UTF-8.
func (g *labelGuard) value(v string) string {
	g.mu.RLock()
	_, ok := g.seen[v]
	g.mu.RUnlock()
	if ok {
		return v
	}
	v = sanitizeLabel(v)
	g.mu.Lock()
	if _, ok := g.seen[v]; ok {
		g.mu.Unlock()
		return v
	}
	if len(g.seen) < g.max {
		g.seen[v] = struct{}{}
		g.mu.Unlock()
		return v
	}
	g.mu.Unlock()
	if !g.warned.Swap(true) {
		g.log.Warn("agentbreaker: metric label has too many values; folding new ones into \"other\"",
			"label", g.name, "limit", g.max, "first_folded", v)
	}
	return otherLabel
}

// required is value for a label that must not be empty.
func (g *labelGuard) required(v string) string {
	if v == "" {
		return unknownLabel
	}
	return g.value(v)
}
