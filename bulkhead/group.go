package bulkhead

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker/clock"
)

// ErrTooManyBulkheads is returned by Group.For when creating a default-sized bulkhead
// would pass GroupConfig.MaxBulkheads.
var ErrTooManyBulkheads = errors.New("bulkhead: too many bulkheads")

// GroupConfig configures a [Group].
type GroupConfig struct {
	// Limits gives dependencies their own size, by dependency key. Defaults to none.
	Limits map[string]int
	// Default is the size of every dependency not in Limits; 0 leaves them unlimited.
	// Defaults to 0.
	Default int
	// MaxBulkheads caps how many default-sized bulkheads are created on demand.
	// Defaults to 1000.
	MaxBulkheads int
	// SustainedRejections, SustainedWindow and Clock are given to every bulkhead; see
	// Config for their defaults.
	SustainedRejections int
	SustainedWindow     time.Duration
	Clock               clock.Clock
}

// Group holds one bulkhead per dependency. It is safe for concurrent use; lookups take
// no lock once a dependency's bulkhead exists.
type Group struct {
	cfg      GroupConfig
	snap     atomic.Pointer[map[string]*Bulkhead]
	mu       sync.Mutex // serialises on-demand creation
	onDemand int
}

// NewGroup builds the configured bulkheads, or returns a *ConfigError naming the
// field (with the dependency key) and the value.
func NewGroup(cfg GroupConfig) (*Group, error) {
	if cfg.Default < 0 {
		return nil, &ConfigError{Package: "bulkhead", Field: "GroupConfig.Default", Value: cfg.Default, Problem: "must be 0 (unlimited) or positive"}
	}
	if cfg.MaxBulkheads == 0 {
		cfg.MaxBulkheads = 1000
	}
	if cfg.MaxBulkheads < 0 {
		return nil, &ConfigError{Package: "bulkhead", Field: "GroupConfig.MaxBulkheads", Value: cfg.MaxBulkheads, Problem: "must be positive"}
	}
	g := &Group{cfg: cfg}
	m := make(map[string]*Bulkhead, len(cfg.Limits))
	for _, key := range slices.Sorted(maps.Keys(cfg.Limits)) {
		field := fmt.Sprintf("GroupConfig.Limits[%q]", key)
		if key == "" {
			return nil, &ConfigError{Package: "bulkhead", Field: field, Value: cfg.Limits[key], Problem: "dependency key is empty"}
		}
		b, err := g.newBulkhead(key, cfg.Limits[key])
		if err != nil {
			return nil, groupError(err, key, field)
		}
		m[key] = b
	}
	if cfg.Default > 0 {
		// Check the shared settings now rather than on the first call.
		if _, err := g.newBulkhead("default", cfg.Default); err != nil {
			return nil, groupError(err, "default", "GroupConfig.Default")
		}
	}
	g.snap.Store(&m)
	return g, nil
}

// MustNewGroup is NewGroup that panics on error.
func MustNewGroup(cfg GroupConfig) *Group {
	g, err := NewGroup(cfg)
	if err != nil {
		panic(err)
	}
	return g
}

// groupError names the GroupConfig field behind the *ConfigError of the bulkhead
// named key: its Config.Limit is limitField, its other fields are the group's settings
// of the same name, shared by every bulkhead, so the problem drops the bulkhead's name.
func groupError(err error, key, limitField string) error {
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	out := *ce
	out.Problem = strings.TrimSuffix(out.Problem, " (bulkhead "+key+")")
	if out.Field == "Config.Limit" {
		out.Field = limitField
	} else {
		out.Field = "Group" + out.Field
	}
	return &out
}

func (g *Group) newBulkhead(key string, limit int) (*Bulkhead, error) {
	return New(Config{
		Name:                key,
		Limit:               limit,
		SustainedRejections: g.cfg.SustainedRejections,
		SustainedWindow:     g.cfg.SustainedWindow,
		Clock:               g.cfg.Clock,
	})
}

// For returns the bulkhead of a dependency, creating a default-sized one on first use.
// It returns nil, nil when the dependency is unlimited.
func (g *Group) For(key string) (*Bulkhead, error) {
	if b, ok := (*g.snap.Load())[key]; ok {
		return b, nil
	}
	if g.cfg.Default == 0 {
		return nil, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	cur := *g.snap.Load()
	if b, ok := cur[key]; ok {
		return b, nil
	}
	if key == "" {
		return nil, errors.New(`bulkhead: dependency key "" is empty`)
	}
	if g.onDemand >= g.cfg.MaxBulkheads {
		return nil, fmt.Errorf("%w: %q would be number %d (MaxBulkheads %d)", ErrTooManyBulkheads, key, g.onDemand+1, g.cfg.MaxBulkheads)
	}
	b, err := g.newBulkhead(key, g.cfg.Default)
	if err != nil {
		return nil, err
	}
	g.onDemand++
	next := maps.Clone(cur)
	next[key] = b
	g.snap.Store(&next)
	return b, nil
}

// Bulkheads returns every bulkhead created so far, sorted by name.
func (g *Group) Bulkheads() []*Bulkhead {
	m := *g.snap.Load()
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b *Bulkhead) int { return strings.Compare(a.name, b.name) })
	return out
}

// InUse returns the slots taken across every bulkhead of the group.
func (g *Group) InUse() int {
	n := 0
	for _, b := range *g.snap.Load() {
		n += b.InUse()
	}
	return n
}
