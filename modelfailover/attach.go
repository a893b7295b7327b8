package modelfailover

import (
	"iter"
	"slices"

	"github.com/agentbreaker/agentbreaker/internal/attach"
)

// The telemetry's Wire observes a Failover after New, through internal/attach rather
// than an exported method, so Config.Observer stays the one public way.
func init() { attach.Register(addObserver) }

// addObserver makes f report to o after Config.Observer. It declines (false) an o that
// is already Config.Observer or was added before, so that wiring twice counts once.
// It is safe for concurrent use.
func addObserver(f *Failover, o Observer) bool {
	if f == nil || o == nil || f.obs == o {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var next []Observer
	if cur := f.added.Load(); cur != nil {
		if slices.Contains(*cur, o) {
			return false
		}
		next = slices.Clone(*cur)
	}
	next = append(next, o)
	f.added.Store(&next)
	return true
}

// observers yields Config.Observer, when set, then the observers added after New.
func (f *Failover) observers() iter.Seq[Observer] {
	return func(yield func(Observer) bool) {
		if f.obs != nil && !yield(f.obs) {
			return
		}
		if cur := f.added.Load(); cur != nil {
			for _, o := range *cur {
				if !yield(o) {
					return
				}
			}
		}
	}
}
