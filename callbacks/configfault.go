package callbacks

import (
	"context"
	"log/slog"

	"github.com/agentbreaker/agentbreaker/classify"
)

// configFaultKey names one configuration fault: a dependency and the class of its
// failure (request_config, auth, tls_config).
type configFaultKey struct {
	dep   string
	class classify.Class
}

// noteConfigFault tells the operator, once per dependency and class for the
// Callbacks' life, that calls fail because of this program's configuration: a
// request net/http refused to send (a URL with no scheme or host), credentials the
// dependency rejects, a certificate it does not trust. Such a failure never counts
// against the breaker, so nothing else would say it: the model is answered with the
// failed payload and the breaker stays closed, call after call. One record, not one
// per call, because every call fails the same way until someone fixes it.
//
// The cause is a fixed phrase for a refused request (classify.RequestConfigCause,
// which never quotes the URL) and the error's fingerprint otherwise: an auth
// failure's text may be the dependency's.
func (c *Callbacks) noteConfigFault(ctx context.Context, inv *invocation, cl *call, cls classify.Classification) {
	if inv == nil {
		return // a call released before it reached its tool: never a fault of this kind
	}
	if _, seen := c.configFaults.LoadOrStore(configFaultKey{dep: cl.dep, class: cls.Class}, struct{}{}); seen {
		return
	}
	inv.mu.Lock()
	err := cl.err
	inv.mu.Unlock()
	var cause slog.Attr
	if s, ok := classify.RequestConfigCause(err); ok {
		cause = slog.String("cause", s)
	} else if err != nil {
		cause = c.errAttr(err)
	}
	e := Event{Kind: EventConfigFault, At: c.timeOf(c.nanos()), Dependency: cl.dep, Tool: cl.tool, CallID: cl.ctx.FunctionCallID(),
		InvocationID: inv.id, Outcome: cls.Outcome, Class: cls.Class, Verdict: cls.Verdict, BreakerState: cl.breaker.State(),
		PolicyVersion: cl.breaker.Policy().Version, StatusCode: cls.StatusCode}
	const msg = "agentbreaker: calls to this dependency fail because of this program's configuration; fix it " +
		"(they do not count against its breaker, and this is said once)"
	if cause.Key == "" {
		c.emit(ctx, e, slog.LevelWarn, msg)
		return
	}
	c.emit(ctx, e, slog.LevelWarn, msg, cause)
}
