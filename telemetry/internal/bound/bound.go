package bound

import (
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/agentbreaker/agentbreaker/internal/unsafetext"
)

// Other replaces label values past a cap or a spent budget, and Unknown an empty value
// where one is required.
const (
	Other   = "other"
	Unknown = "unknown"
)

// MaxLabelLength caps a label value, in bytes. A longer name (a model can invent one of
// any length) is cut at a character boundary and ends in "…", so one call cannot make
// every scrape large.
const MaxLabelLength = 128

// Guard bounds the distinct values of one label. The first max values pass; later ones
// become Other. Fixed values (the library's own, a bounded set given to NewFixedGuard)
// always pass and take no place under the cap. It is safe for concurrent use; a value
// already seen costs one read-locked map lookup.
type Guard struct {
	name   string
	max    int
	log    *slog.Logger
	fixed  map[string]struct{} // read-only after construction
	mu     sync.RWMutex
	seen   map[string]struct{}
	warned atomic.Bool
}

// NewGuard returns a Guard for the label name that admits max values and logs the
// first refusal to log.
func NewGuard(name string, max int, log *slog.Logger) *Guard {
	return &Guard{name: name, max: max, log: log, seen: make(map[string]struct{})}
}

// NewFixedGuard is NewGuard for a label that also carries a bounded set of the
// library's own values (error_class's classes, cause's causes): those always pass as
// they are, outside the cap, so that an alert or a query on one of them never reads
// Other because some classifier invented max names first. The cap holds the values
// not in fixed.
func NewFixedGuard(name string, max int, log *slog.Logger, fixed []string) *Guard {
	g := NewGuard(name, max, log)
	g.fixed = make(map[string]struct{}, len(fixed))
	for _, v := range fixed {
		g.fixed[v] = struct{}{}
	}
	return g
}

// Value returns v, or Other once the label holds max other values. v is sanitised
// first (Sanitize): exporters refuse invalid UTF-8.
func (g *Guard) Value(v string) string {
	if _, ok := g.fixed[v]; ok {
		return v
	}
	g.mu.RLock()
	_, ok := g.seen[v]
	g.mu.RUnlock()
	if ok {
		return v
	}
	v = Sanitize(v)
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
	return Other
}

// Required is Value for a label that must not be empty.
func (g *Guard) Required(v string) string {
	if v == "" {
		return Unknown
	}
	return g.Value(v)
}

// Key identifies one admitted series (or one group of series, such as a breaker's)
// without allocating: a family number and up to four label values.
type Key struct {
	Fam    uint8
	Labels [4]string
}

// Budget admits new series until their total reaches max; after that, callers report
// under the family's Other series and the refusal is counted. Admission is sticky: a
// series admitted once keeps its labels for the life of the budget, so a counter never
// moves between its own series and Other. It is safe for concurrent use; a series
// already admitted costs one read-locked map lookup.
type Budget struct {
	max    int
	log    *slog.Logger
	names  []string        // family names, for the log record
	folded []atomic.Uint64 // refusals by family
	warned atomic.Bool

	mu       sync.RWMutex
	used     int
	admitted map[Key]struct{}
}

// NewBudget returns a budget of max series over the families named by names (indexed
// by Key.Fam).
func NewBudget(max int, names []string, log *slog.Logger) *Budget {
	return &Budget{max: max, log: log, names: names, folded: make([]atomic.Uint64, len(names)), admitted: make(map[Key]struct{})}
}

// Max is the budget's size.
func (b *Budget) Max() int { return b.max }

// Admit reports whether the series k may be exported under its own labels, charging
// cost series to the budget the first time. A refusal is counted (Folded) and, once,
// logged.
func (b *Budget) Admit(k Key, cost int) bool {
	if b.TryAdmit(k, cost) {
		return true
	}
	b.folded[k.Fam].Add(1)
	if !b.warned.Swap(true) {
		b.log.Warn("agentbreaker: telemetry series budget spent; new series are reported as \"other\"",
			"max_series", b.max, "metric", b.names[k.Fam], "first_folded", strings.TrimSpace(strings.Join(k.Labels[:], " ")))
	}
	return false
}

// TryAdmit is Admit without counting or logging a refusal: collections use it, since
// they fold the same breakers again every time.
func (b *Budget) TryAdmit(k Key, cost int) bool {
	b.mu.RLock()
	_, ok := b.admitted[k]
	b.mu.RUnlock()
	if ok {
		return true
	}
	b.mu.Lock()
	if _, ok := b.admitted[k]; ok {
		b.mu.Unlock()
		return true
	}
	if b.used+cost <= b.max {
		b.used += cost
		b.admitted[k] = struct{}{}
		b.mu.Unlock()
		return true
	}
	b.mu.Unlock()
	return false
}

// Known reports whether k was admitted, without charging anything.
func (b *Budget) Known(k Key) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	_, ok := b.admitted[k]
	return ok
}

// Folded returns how many reports of family fam were folded into Other.
func (b *Budget) Folded(fam uint8) uint64 { return b.folded[fam].Load() }

// Sanitize makes v safe as a label value: invalid UTF-8 becomes U+FFFD (the Prometheus
// client refuses invalid UTF-8, and a scrape that panics or fails answers 500), and so
// does every character a dependency key may not hold (redact.CheckName): controls,
// format characters such as the bidirectional overrides and isolates (U+202E, U+2066),
// which would make a dashboard or a terminal show a label other than it is, line
// separators, private use and non-characters. A value longer than MaxLabelLength is
// cut.
func Sanitize(v string) string {
	clean := len(v) <= MaxLabelLength && utf8.ValidString(v)
	if clean {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
				clean = false // control character, or a rune to check below
				break
			}
		}
	}
	if clean {
		return v
	}
	v = strings.ToValidUTF8(v, "\uFFFD")
	v = strings.Map(func(r rune) rune {
		if unsafetext.Rune(r) {
			return '\uFFFD'
		}
		return r
	}, v)
	if len(v) > MaxLabelLength {
		cut := MaxLabelLength - len("…")
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut] + "…"
	}
	return v
}
