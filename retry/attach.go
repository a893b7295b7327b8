package retry

import (
	"context"
	"slices"

	"github.com/agentbreaker/agentbreaker/internal/attach"
)

// The telemetry's Wire hooks the attempts after New, through internal/attach rather
// than an exported method, so Config.OnAttempt stays the one public way.
func init() { attach.Register(addHook) }

// addHook makes r call h after Config.OnAttempt's hooks, for every later attempt. It
// is safe for concurrent use.
func addHook(r *Retrier, h func(context.Context, Event)) bool {
	if r == nil || h == nil {
		return false
	}
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	var next []func(context.Context, Event)
	if cur := r.added.Load(); cur != nil {
		next = slices.Clone(*cur)
	}
	next = append(next, h)
	r.added.Store(&next)
	return true
}
