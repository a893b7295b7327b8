package modelfailover

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
)

// failInfo is the last failure a route's breaker was told about by this Failover:
// the cause of an announcement when that breaker opens.
type failInfo struct {
	class  classify.Class
	status int
}

// finish records how a call ended: the fallback-share window, the serving route
// (announcing a change) and the Observer. r is the route that answered or failed
// last; nil when no model was called. probe reports that the call was r's
// half-open probe.
func (f *Failover) finish(ctx context.Context, t *turn, r *route, s ServedBy, class classify.Class, probe bool) {
	t.endLimit(s == ServedPrimary || s == ServedFallback, class == classify.ClassTimeout)
	now := f.clk.Now()
	f.share.add(now, s)
	var probed *route
	if probe && (s == ServedPrimary || s == ServedFallback) {
		probed = r
	}
	f.refresh(ctx, probed)
	if f.obs == nil && f.added.Load() == nil {
		return
	}
	c := Call{Route: Endpoint{Name: Unavailable}, ServedBy: s, Class: class, Attempts: t.tried,
		RequestID: requestID(ctx), At: now}
	if r != nil {
		c.Route = r.endpoint()
	}
	if s == ServedFallback && len(t.notes) > 0 {
		n := t.notes[0]
		c.FallbackFrom, c.FallbackCause = f.routes[n.idx].endpoint(), n.cause
	}
	for o := range f.observers() {
		o.ObserveCall(ctx, c)
	}
}

// derive returns the route that serves by the rule documented on [Failover]: the
// first route whose breaker admits calls and that no stated delay holds, or -1
// (Unavailable) when none does.
func (f *Failover) derive() int {
	for i, r := range f.routes {
		if r.b.Shadow() {
			return i // a route in shadow mode is never failed over from
		}
		if _, held := f.path.Held(r.key, r.b); !held && r.b.State().Admits() {
			return i
		}
	}
	return -1
}

// refresh compares the serving route with the breakers and, when they disagree,
// makes the change and announces it. probed is the route whose half-open probe
// this call just answered, if any. Changes are decided under f.mu, so two calls
// cannot announce the same change, nor two changes out of order.
func (f *Failover) refresh(ctx context.Context, probed *route) {
	if int(f.serving.Load()) == f.derive() {
		return // the common case: no lock
	}
	f.mu.Lock()
	from, to := int(f.serving.Load()), f.derive()
	if from == to {
		f.mu.Unlock()
		return
	}
	f.serving.Store(int64(to))
	e := f.event(from, to, probed)
	e.RequestID = requestID(ctx)
	f.failovers[[2]string{e.From.Name, e.To.Name}]++
	f.queue = append(f.queue, announcement{ctx: ctx, e: e})
	f.mu.Unlock()
	f.deliver()
}

// event describes the change from route from to route to (-1 is Unavailable).
// Its reason is fixed text with names, classes and status codes only.
func (f *Failover) event(from, to int, probed *route) Event {
	e := Event{From: f.endpointAt(from), To: f.endpointAt(to), Fallback: to != 0, At: f.clk.Now()}
	var b *breaker.Breaker
	switch {
	case to == -1:
		e.Cause = CauseAllRoutesOpen
		e.Reason = "every route's breaker refuses calls: answering without a model"
		b = f.routes[from].b
	case from == -1 || to < from:
		r := f.routes[to]
		b = r.b
		e.Cause = CauseRecovered
		e.Reason = fmt.Sprintf("%s's breaker admits calls again", r.Name)
		if probed == r {
			e.Cause = CauseProbeSucceeded
			e.Reason = fmt.Sprintf("%s answered its half-open probe and its breaker closed", r.Name)
		}
	default:
		// Traffic moves down the list: the breaker of the route that served no
		// longer admits calls.
		r := f.routes[from]
		b = r.b
		e.Cause = CauseBreakerOpen
		e.Reason = fmt.Sprintf("%s's breaker is %s", r.Name, b.State())
		if h, held := f.path.Held(r.key, b); held && b.State().Admits() {
			// Its breaker still admits calls: the endpoint stated a delay (a 429's
			// Retry-After), and no call goes to it until the delay has passed.
			e.Cause = Cause(h.Class)
			e.Reason = fmt.Sprintf("%s asked for a delay (%s): no call goes to it for %s", r.Name, h.Class, h.RetryAfter.Round(time.Second))
		} else if fi := r.lastFail.Load(); fi != nil && b.State() != breaker.ForcedOpen {
			e.Cause = Cause(fi.class)
			e.Reason = fmt.Sprintf("%s's breaker opened after failures (last: %s)", r.Name, describe(fi.class, fi.status))
		}
	}
	e.BreakerState = b.State()
	e.PolicyVersion = b.Policy().Version
	return e
}

// describe names a failure by its class and status code, never by its text.
func describe(c classify.Class, status int) string {
	if status != 0 {
		return fmt.Sprintf("%s, status %d", c, status)
	}
	return string(c)
}

// announcement is a change waiting to be made loud, with the context of the call
// that saw it.
type announcement struct {
	ctx context.Context
	e   Event
}

// deliver makes queued changes loud, in order and outside f.mu. One goroutine
// delivers at a time; another that queues a change meanwhile leaves it to that
// one and goes on, so a hook never makes a second call wait, and a hook that calls
// back into the Failover cannot deadlock.
func (f *Failover) deliver() {
	f.mu.Lock()
	if f.delivering {
		f.mu.Unlock()
		return
	}
	f.delivering = true
	defer func() {
		if r := recover(); r != nil {
			// A hook panicked: let the next delivery start, then re-panic so the bug
			// is seen where it happened.
			f.mu.Lock()
			f.delivering = false
			f.mu.Unlock()
			panic(r)
		}
	}()
	for len(f.queue) > 0 {
		batch := f.queue
		f.queue = nil
		f.mu.Unlock()
		for _, a := range batch {
			f.announce(a.ctx, a.e)
		}
		f.mu.Lock()
	}
	f.delivering = false
	f.mu.Unlock()
}

func (f *Failover) endpointAt(i int) Endpoint {
	if i < 0 {
		return Endpoint{Name: Unavailable}
	}
	return f.routes[i].endpoint()
}

// announce makes a change of the serving route loud: one warning, the hook, the
// Observer. No lock is held.
func (f *Failover) announce(ctx context.Context, e Event) {
	msg := "model failover: serving from a fallback route"
	switch {
	case e.To.Name == Unavailable:
		msg = "model failover: every route is open; answering that the assistant is unavailable"
	case e.To.Primary:
		msg = "model failover: back on the primary route"
	}
	f.log.LogAttrs(ctx, slog.LevelWarn, msg,
		slog.String("from", e.From.Name),
		slog.String("to", e.To.Name),
		slog.String("cause", string(e.Cause)),
		slog.String("reason", e.Reason),
		slog.String("request_id", e.RequestID),
		slog.String("breaker_state", e.BreakerState.String()),
		slog.String("model", e.To.Model),
		slog.String("region", e.To.Region),
		slog.String("policy_version", e.PolicyVersion),
		slog.Bool("fallback", e.Fallback),
	)
	if f.onFailover != nil {
		f.onFailover(e)
	}
	for o := range f.observers() {
		o.ObserveFailover(ctx, e)
	}
}

// requestID reads the adk-go invocation ID from ctx, when it is an adk-go context.
func requestID(ctx context.Context) string {
	if c, ok := ctx.(interface{ InvocationID() string }); ok {
		return c.InvocationID()
	}
	return ""
}

// FailoverCount is how many times the serving route changed from one route to
// another.
type FailoverCount struct {
	From, To string
	Count    uint64
}

// Stats is a snapshot of the Failover's gauges and counters: a plain value that
// the Failover does not change after returning it.
type Stats struct {
	// Serving is the serving route as last announced (the primary before any
	// change), or the Unavailable pseudo-route. See [Failover] for the rule.
	Serving Endpoint
	// Failovers counts the announced changes of the serving route by from and to,
	// sorted.
	Failovers []FailoverCount
	// Window counts the calls of the last Config.ShareWindow by how they were
	// served, with the share served by a fallback. It is computed when Stats is
	// called, so it decays when no call comes.
	Window WindowStats
	// RefusedRetries counts the requests a provider SDK tried to re-send within
	// one attempt whose first request had failed, and that a transport of this
	// Failover refused in the process: they never reached the model's API.
	RefusedRetries uint64
}

// Stats returns the current gauges and counters, for a metrics collector that
// reads them at scrape time.
func (f *Failover) Stats() Stats {
	s := Stats{Serving: f.endpointAt(int(f.serving.Load())), Window: f.share.stats(f.clk.Now()), RefusedRetries: f.refused.Load()}
	f.mu.Lock()
	for k, n := range f.failovers {
		s.Failovers = append(s.Failovers, FailoverCount{From: k[0], To: k[1], Count: n})
	}
	f.mu.Unlock()
	slices.SortFunc(s.Failovers, func(a, b FailoverCount) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})
	return s
}

// unavailable is the honest answer given when every route is open.
func (f *Failover) unavailable() *model.LLMResponse {
	var wait time.Duration
	for i, r := range f.routes {
		d := r.b.RetryAfter()
		if h, held := f.path.Held(r.key, r.b); held {
			d = max(d, h.RetryAfter)
		}
		if i == 0 || d < wait {
			wait = d
		}
	}
	secs := int64((wait + time.Second - 1) / time.Second)
	text := f.message
	if text == "" {
		text = "I'm temporarily unable to answer: the AI model service is unavailable right now."
		if secs > 0 {
			text += fmt.Sprintf(" Please try again in about %d seconds.", secs)
		} else {
			text += " Please try again shortly."
		}
	}
	return &model.LLMResponse{
		Content:      genai.NewContentFromText(text, genai.RoleModel),
		FinishReason: genai.FinishReasonStop,
		TurnComplete: true,
		CustomMetadata: map[string]any{
			MetaRoute:             Unavailable,
			MetaFailover:          true,
			MetaUnavailable:       true,
			MetaRetryAfterSeconds: secs,
		},
	}
}
