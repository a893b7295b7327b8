package admin

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// defaultHistoryPerBreaker is the default of HistoryConfig.PerBreaker.
const defaultHistoryPerBreaker = 10

// defaultHistoryBreakers is the default of HistoryConfig.MaxBreakers.
const defaultHistoryBreakers = 1000

// maxReasonStored caps a stored transition reason, in bytes: an operator's reason is
// already capped at maxReasonLength, and the admin endpoint adds its address.
const maxReasonStored = maxReasonLength + 100

// Transition is one breaker state change as the admin page shows it.
type Transition struct {
	At     time.Time `json:"at"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	Cause  string    `json:"cause"`
	Reason string    `json:"reason"`
	// HealthProbe is set for a transition the dependency's health probe made (package
	// probe), unset for one a user call's probe made.
	HealthProbe bool `json:"health_probe,omitempty"`
}

// HistoryConfig configures a [History].
type HistoryConfig struct {
	// PerBreaker is how many recent transitions are kept for each breaker. From 1 to
	// 100. Defaults to 10.
	PerBreaker int
	// MaxBreakers caps how many breakers have a history; events of further breakers
	// are counted (Dropped) and not kept, so invented names cannot grow memory.
	// Defaults to 1000.
	MaxBreakers int
}

// History keeps the last transitions of each breaker, and since when each one has
// been refusing calls, for the admin page. Feed it every breaker event by adding
// [History.Record] to dependencymap.Config.OnStateChange (next to the telemetry's
// listener), then pass it as Config.History. Memory is bounded: PerBreaker entries for
// at most MaxBreakers breakers.
//
// It is safe for concurrent use.
type History struct {
	per, maxBreakers int
	dropped          atomic.Int64

	mu    sync.Mutex
	rings map[string]*ring
}

// ring is one breaker's recent transitions, oldest overwritten first.
type ring struct {
	entries []Transition // len ≤ per; next is the slot written next once full
	next    int
	// downSince is when the breaker last stopped admitting calls (open, half-open or
	// forced open, from closed or forced closed); zero while it admits them.
	downSince time.Time
}

// NewHistory returns an empty History, or a *ConfigError naming an invalid field.
func NewHistory(cfg HistoryConfig) (*History, error) {
	switch {
	case cfg.PerBreaker == 0:
		cfg.PerBreaker = defaultHistoryPerBreaker
	case cfg.PerBreaker < 1 || cfg.PerBreaker > 100:
		return nil, &ConfigError{Package: "admin", Field: "HistoryConfig.PerBreaker", Value: cfg.PerBreaker, Problem: "must be between 1 and 100", Err: ErrConfig}
	}
	switch {
	case cfg.MaxBreakers == 0:
		cfg.MaxBreakers = defaultHistoryBreakers
	case cfg.MaxBreakers < 0:
		return nil, &ConfigError{Package: "admin", Field: "HistoryConfig.MaxBreakers", Value: cfg.MaxBreakers, Problem: "must be positive", Err: ErrConfig}
	}
	return &History{per: cfg.PerBreaker, maxBreakers: cfg.MaxBreakers, rings: make(map[string]*ring)}, nil
}

// MustNewHistory is NewHistory for configurations known to be valid; it panics on error.
func MustNewHistory(cfg HistoryConfig) *History {
	h, err := NewHistory(cfg)
	if err != nil {
		panic(err)
	}
	return h
}

// Record keeps one breaker event. It has the shape of a breaker.Config.OnStateChange
// listener. An event that only moves an open breaker's reopen time later (From == To)
// is kept too: the page shows it as a longer pause.
func (h *History) Record(e breaker.Event) {
	if h == nil {
		return
	}
	reason := e.Reason
	if len(reason) > maxReasonStored {
		reason = fmt.Sprintf("%s… (%d bytes)", reason[:maxReasonStored], len(reason))
	}
	t := Transition{At: e.At, From: e.From.String(), To: e.To.String(), Cause: e.Cause.String(), Reason: reason, HealthProbe: e.HealthProbe}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.rings[e.Breaker]
	if r == nil {
		if len(h.rings) >= h.maxBreakers {
			h.dropped.Add(1)
			return
		}
		r = &ring{entries: make([]Transition, 0, h.per)}
		h.rings[e.Breaker] = r
	}
	if len(r.entries) < h.per {
		r.entries = append(r.entries, t)
	} else {
		r.entries[r.next] = t
		r.next = (r.next + 1) % h.per
	}
	switch {
	case e.From == e.To:
	case e.From.Admits() && !e.To.Admits():
		r.downSince = e.At
	case e.To.Admits():
		r.downSince = time.Time{}
	}
}

// Recent returns a breaker's kept transitions, newest first, and since when it has
// been refusing calls (zero if it admits them or if the event that stopped it was
// not seen).
func (h *History) Recent(name string) ([]Transition, time.Time) {
	if h == nil {
		return nil, time.Time{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.rings[name]
	if r == nil {
		return nil, time.Time{}
	}
	out := make([]Transition, 0, len(r.entries))
	for i := range len(r.entries) {
		// Newest first: the slot before next, going backwards.
		out = append(out, r.entries[(r.next-1-i+2*len(r.entries))%len(r.entries)])
	}
	return out, r.downSince
}

// Dropped counts events not kept because MaxBreakers breakers already had a history.
func (h *History) Dropped() int64 {
	if h == nil {
		return 0
	}
	return h.dropped.Load()
}
