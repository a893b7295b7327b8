package modelfailover

import (
	"context"
	"log/slog"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
)

// A route whose breaker policy is in shadow mode (breaker.Policy.Shadow) serves every
// call it is given: its stated delays, breaker and adaptive limit decide as if they
// enforced, and what they would have done is logged, but the route is never passed
// over nor failed over from, and the serving route never moves away from it.

// shadowSink is the route attempts' sink on the call path: the failover reports its
// own calls (Observer, Stats), so only a shadow route's refusals need a record.
type shadowSink struct{ f *Failover }

func (shadowSink) Refused(context.Context, *callpath.Call, callpath.Refusal) callpath.Told {
	return callpath.Told{}
}

func (shadowSink) Settled(context.Context, *callpath.Call, callpath.Settlement) {}

// Shadowed logs a route a shadow policy would have passed over; the call was sent.
func (s shadowSink) Shadowed(ctx context.Context, c *callpath.Call, r callpath.Refusal) {
	s.f.log.LogAttrs(ctx, slog.LevelInfo, "model failover: shadow: the route would have been passed over; it was called",
		slog.String("route", c.Tool), slog.String("dependency", c.Dependency),
		slog.String("error_class", string(r.Class)), slog.String("breaker_state", r.State.String()),
		slog.Duration("retry_after", r.RetryAfter), slog.String("request_id", requestID(ctx)))
}

// wouldFailOver logs a failure after which a shadow route would have been failed
// over from; the caller gets the route's answer instead.
func (f *Failover) wouldFailOver(ctx context.Context, r *route, class classify.Class) {
	f.log.LogAttrs(ctx, slog.LevelInfo, "model failover: shadow: the call would have failed over; the route's answer stands",
		slog.String("route", r.Name), slog.String("dependency", r.key), slog.String("error_class", string(class)),
		slog.String("request_id", requestID(ctx)))
}

// checkTransport warns once per route whose model answered an HTTP status that no
// transport of this Failover saw: its client was built without NewTransport, so a
// stated delay (Retry-After) is lost and its SDK may retry inside an attempt. It is
// the one call the Failover cannot make for the user.
func (f *Failover) checkTransport(ctx context.Context, r *route, c classify.Classification, rec *recorder) {
	if c.StatusCode == 0 || rec.seen() || !r.untapped.CompareAndSwap(false, true) {
		return
	}
	f.log.LogAttrs(ctx, slog.LevelWarn, "model failover: the route's model client does not use modelfailover.NewTransport; "+
		"wrap its HTTP client with it so that stated delays reach the breaker and each attempt sends one request",
		slog.String("route", r.Name), slog.Int("status", c.StatusCode))
}
