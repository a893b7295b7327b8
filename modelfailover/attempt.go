package modelfailover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
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
	idx    int
	cause  Cause
	reason string
}

// turn records what happened to each route during one model call. It belongs to
// the call's goroutine.
type turn struct {
	notes     []note
	attempts  []AttemptError
	skipped   []string
	lastRoute *route
	tried     int // routes called
}

func (t *turn) skip(r *route, err error) {
	reason := fmt.Sprintf("%s skipped: breaker %s", r.Name, r.b.State())
	if oe, ok := errors.AsType[*breaker.OpenError](err); ok {
		reason = fmt.Sprintf("%s skipped: %v", r.Name, oe)
	}
	t.notes = append(t.notes, note{idx: r.idx, cause: CauseBreakerOpen, reason: reason})
	t.skipped = append(t.skipped, r.Name)
}

func (t *turn) fail(r *route, c classify.Classification, err error) {
	t.notes = append(t.notes, note{idx: r.idx, cause: Cause(c.Class),
		reason: fmt.Sprintf("%s failed (%s): %v", r.Name, c.Class, err)})
	t.attempts = append(t.attempts, AttemptError{Route: r.Name, Class: c.Class, Err: err})
	t.lastRoute = r
}

// why returns the note on route idx, else the last note of the call.
func (t *turn) why(idx int) (note, bool) {
	for _, n := range t.notes {
		if n.idx == idx {
			return n, true
		}
	}
	if len(t.notes) > 0 {
		return t.notes[len(t.notes)-1], true
	}
	return note{}, false
}

func (t *turn) routesError() error {
	return &RoutesError{Attempts: slices.Clone(t.attempts), Skipped: slices.Clone(t.skipped)}
}

// attempt calls one route whose breaker admitted the call, reports the outcome
// through p, and passes responses on. It returns false when the route failed
// before anything was passed on and in a way that another route may fix: the
// caller then tries the next route.
func (f *Failover) attempt(ctx context.Context, r *route, p *breaker.Permit, req *model.LLMRequest,
	stream bool, t *turn, yield func(*model.LLMResponse, error) bool) (done bool) {
	probe := p.IsProbe()
	t.tried++
	// The caller stopped reading, or the model panicked: free the permit (and a
	// probe's slot) without judging the route. A no-op once an outcome is reported.
	defer p.Ignore()
	llm := r.LLM
	if llm == nil {
		llm = f.routes[0].LLM
	}
	rec := &recorder{}
	yielded, answered := false, false
	for resp, err := range llm.GenerateContent(withRecorder(ctx, rec), f.request(r, req), stream) {
		if err != nil {
			if answered {
				yield(nil, err) // the outcome is already recorded
				return true
			}
			c := f.classify(ctx, err, rec)
			report(p, c)
			f.log.LogAttrs(ctx, slog.LevelDebug, "model failover: attempt failed",
				slog.String("route", r.Name), slog.String("class", string(c.Class)),
				slog.String("verdict", c.Verdict.String()), slog.Bool("after_output", yielded),
				slog.Duration("retry_after", c.RetryAfter), slog.Int("status_code", c.StatusCode),
				redact.ErrorAttr("error", err)) // the model API's words: fingerprint only
			if !yielded && c.Verdict == classify.Counts {
				t.fail(r, c, err)
				return false
			}
			f.finish(ctx, t, r, ServedFailed, c.Class, probe)
			yield(nil, err)
			return true
		}
		if resp == nil {
			continue
		}
		if !resp.Partial && !answered {
			// One success per call, on the final response: never per chunk.
			answered = true
			c := responseClass(resp)
			report(p, c)
			f.finish(ctx, t, r, servedBy(r), c.Class, probe)
		}
		mark(resp, r)
		yielded = true
		if !yield(resp, nil) {
			return true
		}
	}
	if answered {
		return true
	}
	c := classify.ForClass(classify.ClassUnclassified)
	report(p, c)
	err := fmt.Errorf("%w (route %s)", ErrNoFinalResponse, r.Name)
	if !yielded {
		t.fail(r, c, err)
		return false
	}
	f.finish(ctx, t, r, ServedFailed, c.Class, probe)
	yield(nil, err)
	return true
}

// request returns the request as route r sends it: its model name, the attempt
// timeout, and copies of everything a model may change in place, so that a later
// route gets the request as the caller made it.
func (f *Failover) request(r *route, req *model.LLMRequest) *model.LLMRequest {
	c := *req
	c.Model = r.Model
	c.Contents = slices.Clip(req.Contents) // a model appending a turn gets its own array
	cfg := genai.GenerateContentConfig{}
	if req.Config != nil {
		cfg = *req.Config
	}
	if cfg.HTTPOptions != nil {
		h := *cfg.HTTPOptions
		h.Headers = h.Headers.Clone()
		h.Headers.Del(attemptHeader) // the callbacks' tag names another attempt
		cfg.HTTPOptions = &h
	}
	if f.timeout > 0 && (cfg.HTTPOptions == nil || cfg.HTTPOptions.Timeout == nil) {
		if cfg.HTTPOptions == nil {
			cfg.HTTPOptions = &genai.HTTPOptions{}
		}
		d := f.timeout
		cfg.HTTPOptions.Timeout = &d
	}
	c.Config = &cfg
	return &c
}

// classify judges a failed attempt. ctx is the caller's context: when it is done
// the caller gave up and the route is not to blame.
func (f *Failover) classify(ctx context.Context, err error, rec *recorder) classify.Classification {
	in := classify.Input{Context: ctx, Err: err, Now: f.clk.Now()}
	if status, header := rec.get(); status != 0 {
		if status >= 400 {
			in.StatusCode = status
		}
		in.Header = header
	}
	c := f.cls.Classify(in)
	if c.Class == classify.ClassUnclassified && err.Error() == adkEmptyResponse {
		// adk's Gemini model reports an answer without candidates, which is how the
		// API answers a blocked prompt, as this bare error. The endpoint answered:
		// counting it would let users' prompts trip the breaker, and another route
		// would block the prompt too.
		c = classify.ForClass(classify.ClassEmptyResult)
		c.StatusCode = in.StatusCode
	}
	return c
}

// adkEmptyResponse is the text of the error model/gemini returns for an answer
// with no candidates (google.golang.org/adk/v2 v2.2.0, gemini.go).
const adkEmptyResponse = "empty response"

// responseClass judges an answer. Every answer is a success for the endpoint's
// health, including a safety block: the endpoint worked and would answer the same
// way again. The class tells the two apart for metrics.
func responseClass(resp *model.LLMResponse) classify.Classification {
	reason := resp.FinishReason
	if reason == "" && resp.ErrorCode != "" {
		reason = genai.FinishReason(resp.ErrorCode) // a blocked prompt names its reason here
	}
	c := classify.FinishReason(reason)
	c.Verdict = classify.Healthy
	return c
}

// report hands a classification to the breaker through the permit.
func report(p *breaker.Permit, c classify.Classification) {
	v := breaker.Ignore
	switch c.Verdict {
	case classify.Healthy:
		v = breaker.Success
	case classify.Counts:
		v = breaker.Failure
	}
	p.Report(breaker.Report{Verdict: v, RetryAfter: c.RetryAfter})
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
