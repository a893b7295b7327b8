package modelfailover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
	"github.com/agentbreaker/agentbreaker/redact"
)

// Keys of the markers put in every response's CustomMetadata.
const (
	// MetaRoute names the route that produced the response, or Unavailable.
	MetaRoute = "agentbreaker_route"
	// MetaFailover is true when the response did not come from the primary route.
	MetaFailover = "agentbreaker_failover"
	// MetaUnavailable is true on the unavailable answer, which no model wrote.
	MetaUnavailable = "agentbreaker_unavailable"
	// MetaRetryAfterSeconds, on the unavailable answer, is when the first route
	// may be tried again.
	MetaRetryAfterSeconds = "agentbreaker_retry_after_seconds"
)

// note is why one route did not serve a call.
type note struct {
	idx   int
	cause Cause
}

// turn records what happened to each route during one model call. It belongs to
// the call's goroutine.
type turn struct {
	notes     []note
	attempts  []AttemptError
	skipped   []string
	lastRoute *route
	tried     int // routes called
	// lim is the adaptive-limit place of the route being tried, while limHeld
	// (adaptive.go); finish and fail end it.
	lim     adaptivelimit.Permit
	limHeld bool
}

// skip notes route r passed over for cause, never called.
func (t *turn) skip(r *route, cause Cause) {
	t.notes = append(t.notes, note{idx: r.idx, cause: cause})
	t.skipped = append(t.skipped, r.Name)
}

func (t *turn) fail(r *route, c classify.Classification, err error) {
	t.endLimit(false, c.Class == classify.ClassTimeout)
	t.notes = append(t.notes, note{idx: r.idx, cause: Cause(c.Class)})
	t.attempts = append(t.attempts, AttemptError{Route: r.Name, Class: c.Class, Err: err})
	t.lastRoute = r
}

func (t *turn) routesError() error {
	return &RoutesError{Attempts: slices.Clone(t.attempts), Skipped: slices.Clone(t.skipped)}
}

// attempt calls one route whose breaker admitted the call, reports the outcome
// through p, and passes responses on. It returns false when the route failed
// before anything was passed on and in a way that another route may fix: the
// caller then tries the next route.
func (f *Failover) attempt(ctx context.Context, r *route, p *callpath.Call, req *model.LLMRequest,
	stream bool, t *turn, yield func(*model.LLMResponse, error) bool) (done bool) {
	probe := p.IsProbe()
	t.tried++
	// The model panicked, or an early return left the call: free it (and a probe's
	// slot) without judging the route. A no-op once an outcome is reported.
	defer f.path.Release(p)
	llm := r.LLM
	if llm == nil {
		llm = f.routes[0].LLM
	}
	rec := &recorder{f: f}
	actx, w := f.bounds.watch(ctx)
	defer w.stop()
	yielded, answered := false, false
	// failed ends the attempt on a failure: another route is tried when nothing
	// was passed on and the route is to blame, else the error goes to the caller.
	failed := func(c classify.Classification, err error) bool {
		f.checkTransport(ctx, r, c, rec)
		f.report(ctx, r, p, c)
		f.log.LogAttrs(ctx, slog.LevelDebug, "model failover: attempt failed",
			slog.String("route", r.Name), slog.String("class", string(c.Class)),
			slog.Int("status", c.StatusCode), slog.String("verdict", c.Verdict.String()),
			slog.Bool("after_output", yielded), slog.Duration("retry_after", c.RetryAfter),
			redact.ErrorAttr("error", err)) // the model API's words: fingerprint only
		if !yielded && c.Verdict == classify.Counts {
			if !r.b.Shadow() {
				t.fail(r, c, err)
				return false
			}
			f.wouldFailOver(ctx, r, c.Class) // a route in shadow mode is never failed over from
		}
		f.finish(ctx, t, r, failedOrAbandoned(ctx), c.Class, probe)
		yield(nil, err)
		return true
	}
	for resp, err := range llm.GenerateContent(withRecorder(ctx, actx, rec), f.request(r, req), stream) {
		w.received()
		if err != nil {
			c := f.classify(ctx, actx, err, rec)
			if e, ok := expired(actx); ok && ctx.Err() == nil {
				err = &TimeoutError{Route: r.Name, Bound: e.bound, After: e.after, Err: err}
			}
			if answered {
				yield(nil, err) // the outcome is already recorded
				return true
			}
			return failed(c, err)
		}
		if resp == nil || (resp.Partial && nothing(resp)) {
			// An empty chunk tells the caller nothing: holding it back keeps a
			// stream that never says anything eligible for failover.
			w.waiting()
			continue
		}
		if !resp.Partial && !answered {
			// One verdict per call, on the final response: never per chunk.
			c := filtered(responseClass(resp), rec)
			if c.Verdict == classify.Counts {
				return failed(c, fmt.Errorf("%w (route %s)", ErrEmptyAnswer, r.Name))
			}
			answered = true
			f.report(ctx, r, p, c)
			f.finish(ctx, t, r, servedBy(r), c.Class, probe)
		}
		mark(resp, r)
		yielded = true
		if !yield(resp, nil) {
			if !answered {
				// The caller left mid-stream: one call, reported as abandoned; the
				// deferred Ignore gives the permit back unjudged.
				f.finish(ctx, t, r, ServedAbandoned, classify.ClassCanceled, probe)
			}
			return true
		}
		w.waiting()
	}
	if answered {
		return true
	}
	return failed(filtered(classify.ForClass(classify.ClassUnclassified), rec), fmt.Errorf("%w (route %s)", ErrNoFinalResponse, r.Name))
}

// request returns the request as route r sends it: its model name and copies of everything a model may change in place, so that a later
// route gets the request as the caller made it.
func (f *Failover) request(r *route, req *model.LLMRequest) *model.LLMRequest {
	c := *req
	c.Model = r.Model
	c.Contents = slices.Clip(req.Contents) // a model appending a turn gets its own array
	cfg := genai.GenerateContentConfig{}
	if req.Config != nil {
		cfg = *req.Config
	}
	h := genai.HTTPOptions{}
	if cfg.HTTPOptions != nil {
		h = *cfg.HTTPOptions
		h.Headers = h.Headers.Clone()
		h.Headers.Del(attemptHeader) // the callbacks' tag names another attempt
	}
	h = pinGenaiRetries(h) // the failover owns retries (sdkretry.go)
	cfg.HTTPOptions = &h
	c.Config = &cfg
	return &c
}

// classify judges a failed attempt. ctx is the caller's context: when it is done
// the caller gave up and the route is not to blame. actx is the attempt's own
// context (nil in the callbacks path): when one of the Failover's time bounds
// cancelled it, the attempt timed out.
func (f *Failover) classify(ctx, actx context.Context, err error, rec *recorder) classify.Classification {
	status, header, body := rec.get()
	if actx != nil && ctx.Err() == nil {
		if _, ok := expired(actx); ok {
			c := classify.ForClass(classify.ClassTimeout)
			if status >= 400 {
				// An answer that stated a delay came before the bound ran out (an
				// SDK sleeping on it): the delay still floors the route's reopen.
				c.RetryAfter = classify.HTTPStatus(status, header, f.clk.Now()).RetryAfter
			}
			return c
		}
	}
	if sendErr := rec.sendError(); sendErr != nil {
		// The transport answered the SDK locally instead of passing a transport
		// error on (so that the SDK would not retry it): judge the real error.
		err = sendErr
	}
	if status >= 400 && rec.refusedAny() {
		// The SDK re-sent and got the transport's local answer: its error
		// describes that answer. Judge the endpoint's own, which the transport saw.
		err = nil
	}
	in := classify.Input{Context: ctx, Err: err, Now: f.clk.Now()}
	if status >= 400 {
		in.StatusCode = status
	}
	in.Header = header
	c := f.cls.Classify(in)
	if c.Class == classify.ClassUnclassified && status == http.StatusOK && rec.contentFiltered() {
		// An OpenAI Responses API answer stopped by its content filter, with no
		// output (openaimodel's ErrNoOutputItems, or a stream with nothing in it).
		c = filtered(c, rec)
		c.StatusCode = status
		return c
	}
	var apiErr genai.APIError
	if c.Class == classify.ClassUnclassified && status == http.StatusOK && body.read && !errors.As(err, &apiErr) {
		// The endpoint answered 200 and the model still failed: decide from the
		// answer the transport saw, never from another library's error text.
		switch {
		case body.blockReason != "":
			// The prompt was blocked: the request's fault. The endpoint works, and
			// another route would block the prompt too.
			c = classify.ForClass(classify.ClassSafetyBlock)
		case body.candidates == 0:
			// Nothing at all: the endpoint failed to answer (a broken gateway's
			// "{}"). It stays an unclassified failure, which counts.
		}
		c.StatusCode = status
	}
	return c
}

// filtered returns c, or a healthy safety_block when the transport saw the
// answer stopped by a content filter: the endpoint worked, and another route
// would filter the same content.
func filtered(c classify.Classification, rec *recorder) classify.Classification {
	if !rec.contentFiltered() {
		return c
	}
	out := classify.ForClass(classify.ClassSafetyBlock)
	out.Verdict = classify.Healthy
	out.StatusCode = c.StatusCode
	return out
}

// responseClass judges an answer. An answer is a success for the endpoint's
// health, including a safety block or a blocked prompt (the endpoint worked and
// would answer the same way again); the class tells them apart for metrics. An
// answer with nothing at all in it (no content, no finish reason, no block
// reason) is the endpoint's failure.
func responseClass(resp *model.LLMResponse) classify.Classification {
	if nothing(resp) {
		return classify.ForClass(classify.ClassUnclassified)
	}
	c := classify.FinishReason(resp.FinishReason)
	if resp.FinishReason == "" && resp.ErrorCode != "" {
		// adk-go puts a blocked prompt's block reason here, with no candidate.
		c = classify.ForClass(classify.ClassSafetyBlock)
	}
	c.Verdict = classify.Healthy
	return c
}

// nothing reports a response that carries no content, no finish reason and no
// error code.
func nothing(resp *model.LLMResponse) bool {
	if resp.FinishReason != "" || resp.ErrorCode != "" {
		return false
	}
	if resp.Content != nil {
		for _, p := range resp.Content.Parts {
			if p != nil && !reflect.ValueOf(*p).IsZero() {
				return false
			}
		}
	}
	return true
}

// report settles the call on route r on the call path (its breaker hears c, a delay
// the answer stated holds the route), and keeps a failure that counts as the cause
// to name if that breaker opens.
func (f *Failover) report(ctx context.Context, r *route, p *callpath.Call, c classify.Classification) {
	if c.Verdict == classify.Counts {
		r.lastFail.Store(&failInfo{class: c.Class, status: c.StatusCode})
	}
	f.path.Settle(ctx, p, c, "")
}

// admit runs the call path's admission for route r: the route's stated delay, then
// its breaker. A refused route is noted as passed over, with the refusal's class.
func (f *Failover) admit(ctx context.Context, r *route, t *turn) (*callpath.Call, bool) {
	c := &callpath.Call{Dependency: r.key, Tool: r.Name, Breaker: r.b}
	if ref, ok := f.path.Admit(ctx, c); !ok {
		cause := CauseBreakerOpen
		if ref.Control == callpath.Held {
			cause = Cause(ref.Class)
		}
		t.skip(r, cause)
		return nil, false
	}
	return c, true
}

// failedOrAbandoned is how a call that ended in an error was served: abandoned
// when the caller gave up (its context is done), else failed.
func failedOrAbandoned(ctx context.Context) ServedBy {
	if ctx.Err() != nil {
		return ServedAbandoned
	}
	return ServedFailed
}

func servedBy(r *route) ServedBy {
	if r.idx == 0 {
		return ServedPrimary
	}
	return ServedFallback
}

// mark tags a response with the route that produced it.
func mark(resp *model.LLMResponse, r *route) {
	m := maps.Clone(resp.CustomMetadata)
	if m == nil {
		m = make(map[string]any, 2)
	}
	m[MetaRoute] = r.Name
	m[MetaFailover] = r.idx != 0
	resp.CustomMetadata = m
}
