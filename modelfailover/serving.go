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

	"github.com/agentbreaker/agentbreaker/classify"
)

// finish records how a call ended: the fallback-share window, the serving route
// (announcing a change) and the Observer. r is the route that answered or failed
// last; nil when no model was called.
func (f *Failover) finish(ctx context.Context, t *turn, r *route, s ServedBy, class classify.Class, probe bool) {
	now := f.clk.Now()
	f.share.add(now, s)
	var ev *Event
	switch s {
	case ServedPrimary, ServedFallback:
		ev = f.move(r.idx, t, probe, now)
	case ServedUnavailable:
		ev = f.move(-1, t, false, now)
	}
	if ev != nil {
		f.announce(ctx, *ev)
	}
	if f.obs != nil {
		ep := Endpoint{Name: Unavailable}
		if r != nil {
			ep = r.endpoint()
		}
		f.obs.ObserveCall(Call{Route: ep, ServedBy: s, Class: class, Attempts: t.tried, At: now})
	}
}

// move makes route to (-1 for Unavailable) the serving one and returns the event,
// or nil when it was already serving. Of concurrent calls making the same change,
// exactly one gets the event.
func (f *Failover) move(to int, t *turn, probe bool, now time.Time) *Event {
	var from int
	for {
		from = int(f.serving.Load())
		if from == to {
			return nil
		}
		if f.serving.CompareAndSwap(int64(from), int64(to)) {
			break
		}
	}
	e := Event{From: f.endpointAt(from), To: f.endpointAt(to), Fallback: to != 0, At: now}
	state := f.routeAt(from)
	switch {
	case to == -1:
		e.Cause = CauseAllRoutesOpen
		e.Reason = "every route's breaker is open: answering without a model"
	case from == -1 || to < from:
		e.Cause, e.Reason = CauseRecovered, fmt.Sprintf("%s answered again", e.To.Name)
		if probe {
			e.Cause, e.Reason = CauseProbeSucceeded, fmt.Sprintf("%s answered its half-open probe", e.To.Name)
		}
		if from == -1 {
			state = f.routes[to]
		}
	default:
		e.Cause, e.Reason = Cause(classify.ClassUnclassified), "the route ahead did not serve"
		if n, ok := t.why(from); ok {
			e.Cause, e.Reason = n.cause, n.reason
		}
	}
	e.BreakerState = state.b.State()
	e.PolicyVersion = state.b.Policy().Version
	f.mu.Lock()
	f.failovers[[2]string{e.From.Name, e.To.Name}]++
	f.mu.Unlock()
	return &e
}

func (f *Failover) routeAt(i int) *route {
	if i < 0 {
		return nil
	}
	return f.routes[i]
}

func (f *Failover) endpointAt(i int) Endpoint {
	if i < 0 {
		return Endpoint{Name: Unavailable}
	}
	return f.routes[i].endpoint()
}

// announce makes a change of the serving route loud: a warning, the hook, the
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
		slog.String("breaker_state", e.BreakerState.String()),
		slog.String("model", e.To.Model),
		slog.String("region", e.To.Region),
		slog.String("policy_version", e.PolicyVersion),
		slog.Bool("fallback", e.Fallback),
		slog.String("reason", e.Reason),
	)
	if f.onFailover != nil {
		f.onFailover(e)
	}
	if f.obs != nil {
		f.obs.ObserveFailover(e)
	}
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
	// Serving is the route that answered the latest call (the primary before any
	// call), or the Unavailable pseudo-route.
	Serving Endpoint
	// Failovers counts the changes of the serving route by from and to, sorted.
	Failovers []FailoverCount
	// Window counts the calls of the last Config.ShareWindow by how they were
	// served, with the share served by a fallback.
	Window WindowStats
}

// Stats returns the current gauges and counters, for a metrics collector that
// reads them at scrape time.
func (f *Failover) Stats() Stats {
	s := Stats{Serving: f.endpointAt(int(f.serving.Load())), Window: f.share.stats(f.clk.Now())}
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
		if d := r.b.RetryAfter(); i == 0 || d < wait {
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
