package modelfailover_test

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// scripted is a model.LLM whose answers a test decides, for behaviour that a real
// Gemini model cannot be made to show (a stream with no final response) and for
// driving many calls cheaply.
type scripted struct {
	name string
	mu   sync.Mutex
	reqs []*model.LLMRequest
	// answer returns the responses of one call; nil answers "ok".
	answer func(call int) []step
}

type step struct {
	resp *model.LLMResponse
	err  error
}

func (s *scripted) Name() string { return s.name }

func (s *scripted) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	call := len(s.reqs)
	s.mu.Unlock()
	steps := []step{{resp: final("ok from " + s.name)}}
	if s.answer != nil {
		steps = s.answer(call)
	}
	return func(yield func(*model.LLMResponse, error) bool) {
		for _, st := range steps {
			if !yield(st.resp, st.err) {
				return
			}
		}
	}
}

func (s *scripted) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func final(text string) *model.LLMResponse {
	return &model.LLMResponse{Content: genai.NewContentFromText(text, genai.RoleModel), FinishReason: genai.FinishReasonStop}
}

func partial(text string) *model.LLMResponse {
	return &model.LLMResponse{Content: genai.NewContentFromText(text, genai.RoleModel), Partial: true}
}

var unavailable = genai.APIError{Code: 503, Status: "UNAVAILABLE", Message: "down"}

func newRequest() *model.LLMRequest {
	return &model.LLMRequest{Model: "agent-name", Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}}
}

type directHarness struct {
	clock *clock.Fake
	deps  *dependencymap.Map
	f     *modelfailover.Failover
	a, b  *scripted
	obs   *eventLog
}

func newDirect(t *testing.T, mutate func(*modelfailover.Config)) *directHarness {
	t.Helper()
	d := &directHarness{clock: clock.NewFake(time.Time{}), a: &scripted{name: "a"}, b: &scripted{name: "b"}, obs: &eventLog{}}
	d.deps = dependencymap.MustNew(dependencymap.Config{Clock: d.clock, ModelDefault: testPolicy})
	cfg := modelfailover.Config{
		Routes:   []modelfailover.Route{{Name: "a", Model: pro, Region: "r1", LLM: d.a}, {Name: "b", Model: flash, Region: "r1", LLM: d.b}},
		Breakers: d.deps, Clock: d.clock, Observer: d.obs,
		Logger: discardLogger(),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	d.f = modelfailover.MustNew(cfg)
	return d
}

func (d *directHarness) call(t *testing.T, stream bool) ([]*model.LLMResponse, error) {
	t.Helper()
	var out []*model.LLMResponse
	for resp, err := range d.f.GenerateContent(t.Context(), newRequest(), stream) {
		if err != nil {
			return out, err
		}
		out = append(out, resp)
	}
	return out, nil
}

func (d *directHarness) breakerA(t *testing.T) *breaker.Breaker {
	b, err := d.deps.ForModel(pro, "r1")
	require.NoError(t, err)
	return b
}

// A consumer that stops reading gives the permit back at once, even with no
// cancellation to tell the model, and the call is reported as abandoned.
func TestStoppingTheIteratorReleasesAProbe(t *testing.T) {
	d := newDirect(t, nil)
	d.a.answer = func(call int) []step {
		if call <= 2 {
			return []step{{err: unavailable}}
		}
		return []step{{resp: partial("one ")}, {resp: partial("two")}, {resp: final("one two")}}
	}
	for range 2 {
		_, err := d.call(t, false)
		require.NoError(t, err)
	}
	require.Equal(t, breaker.Open, d.breakerA(t).State())
	d.clock.Advance(30 * time.Second)
	for resp := range d.f.GenerateContent(t.Context(), newRequest(), true) {
		assert.Equal(t, "a", resp.CustomMetadata[modelfailover.MetaRoute])
		break
	}
	assert.Equal(t, breaker.HalfOpen, d.breakerA(t).State())
	resps, err := d.call(t, true)
	require.NoError(t, err)
	assert.Len(t, resps, 3)
	assert.Equal(t, 4, d.a.calls(), "the probe slot was free again")
	assert.Equal(t, breaker.Closed, d.breakerA(t).State())
	// Issue 13f: the abandoned stream is one ObserveCall, like every model call.
	assert.Equal(t, []string{"fallback:b", "fallback:b", "abandoned:a", "primary:a"}, d.obs.servedBy())
}

// A model that ends without a final response has failed: before any output the
// next route answers; after partial output the caller gets ErrNoFinalResponse.
func TestNoFinalResponse(t *testing.T) {
	t.Run("nothing yielded", func(t *testing.T) {
		d := newDirect(t, nil)
		d.a.answer = func(int) []step { return nil }
		resps, err := d.call(t, false)
		require.NoError(t, err)
		require.Len(t, resps, 1)
		assert.Equal(t, "b", resps[0].CustomMetadata[modelfailover.MetaRoute])
		assert.Equal(t, int64(1), d.breakerA(t).Snapshot().Window.Failures)
	})
	t.Run("after partial output", func(t *testing.T) {
		d := newDirect(t, nil)
		d.a.answer = func(int) []step { return []step{{resp: partial("half")}} }
		resps, err := d.call(t, true)
		require.ErrorIs(t, err, modelfailover.ErrNoFinalResponse)
		assert.Len(t, resps, 1)
		assert.Zero(t, d.b.calls())
		assert.Equal(t, int64(1), d.breakerA(t).Snapshot().Window.Failures)
	})
}

// An error after the final response is passed on; the success already recorded
// stands, and there is no failover.
func TestErrorAfterTheFinalResponse(t *testing.T) {
	d := newDirect(t, nil)
	late := errors.New("trailing garbage")
	d.a.answer = func(int) []step { return []step{{resp: final("done")}, {err: late}} }
	resps, err := d.call(t, true)
	require.ErrorIs(t, err, late)
	assert.Len(t, resps, 1)
	w := d.breakerA(t).Snapshot().Window
	assert.Equal(t, int64(1), w.Calls)
	assert.Zero(t, w.Failures)
	assert.Zero(t, d.b.calls())
}

// Each route gets the request with its own model name and its own copies; the
// caller's request is unchanged when the next route is tried. AttemptTimeout is not
// turned into genai's HTTPOptions.Timeout, which would bound a whole stream.
func TestEachAttemptGetsItsOwnRequest(t *testing.T) {
	d := newDirect(t, func(c *modelfailover.Config) { c.AttemptTimeout = 5 * time.Second })
	d.a.answer = func(int) []step {
		return []step{{err: unavailable}}
	}
	req := newRequest()
	req.Config = &genai.GenerateContentConfig{HTTPOptions: &genai.HTTPOptions{Headers: http.Header{"X-Keep": {"1"}}}}
	for _, err := range d.f.GenerateContent(t.Context(), req, false) {
		require.NoError(t, err)
	}
	require.Equal(t, 1, d.a.calls())
	require.Equal(t, 1, d.b.calls())
	ra, rb := d.a.reqs[0], d.b.reqs[0]
	assert.Equal(t, pro, ra.Model)
	assert.Equal(t, flash, rb.Model)
	assert.Nil(t, ra.Config.HTTPOptions.Timeout)
	assert.Equal(t, "1", rb.Config.HTTPOptions.Headers.Get("X-Keep"))
	assert.Equal(t, "agent-name", req.Model)
	assert.Nil(t, req.Config.HTTPOptions.Timeout)
	ra.Config.HTTPOptions.Headers.Set("X-Changed", "by a")
	assert.Empty(t, req.Config.HTTPOptions.Headers.Get("X-Changed"))
}

// The share of calls served by a fallback is measured over a sliding window on
// the injected clock, so an alert can see a sustained demotion.
func TestFallbackShareOverTheWindow(t *testing.T) {
	d := newDirect(t, func(c *modelfailover.Config) { c.ShareWindow = 10 * time.Minute })
	assert.Equal(t, "a", d.f.Stats().Serving.Name, "the primary serves before any call")
	down := false
	d.a.answer = func(int) []step {
		if down {
			return []step{{err: unavailable}}
		}
		return []step{{resp: final("a")}}
	}
	for range 4 {
		_, err := d.call(t, false)
		require.NoError(t, err)
	}
	d.clock.Advance(5 * time.Minute)
	down = true
	for range 6 {
		_, err := d.call(t, false)
		require.NoError(t, err)
	}
	w := d.f.Stats().Window
	assert.Equal(t, modelfailover.WindowStats{Span: 10 * time.Minute, Calls: 10, Primary: 4, Fallback: 6, FallbackShare: 0.6}, w)

	// The primary's calls slide out of the window; the demotion remains.
	d.clock.Advance(5*time.Minute + time.Second)
	w = d.f.Stats().Window
	assert.Equal(t, uint64(6), w.Calls)
	assert.Equal(t, 1.0, w.FallbackShare)
	d.clock.Advance(10 * time.Minute)
	assert.Equal(t, modelfailover.WindowStats{Span: 10 * time.Minute}, d.f.Stats().Window)

	// Every call was observed once, with how it was served.
	served := d.obs.servedBy()
	require.Len(t, served, 10)
	assert.Equal(t, "primary:a", served[0])
	assert.Equal(t, "fallback:b", served[9])
	d.obs.mu.Lock()
	assert.Equal(t, 2, d.obs.calls[4].Attempts, "a failed, b answered")
	assert.Equal(t, 1, d.obs.calls[9].Attempts, "a was open by then")
	d.obs.mu.Unlock()
}

// When every route is open the answer comes with no call at all, and says when
// to try again.
func TestUnavailableAnswer(t *testing.T) {
	d := newDirect(t, nil)
	d.a.answer = func(int) []step { return []step{{err: unavailable}} }
	d.b.answer = d.a.answer
	for range 2 {
		_, err := d.call(t, false)
		var re *modelfailover.RoutesError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, []string{"a", "b"}, []string{re.Attempts[0].Route, re.Attempts[1].Route})
	}
	d.clock.Advance(10 * time.Second)
	resps, err := d.call(t, true)
	require.NoError(t, err)
	require.Len(t, resps, 1)
	r := resps[0]
	assert.False(t, r.Partial)
	assert.Equal(t, "I'm temporarily unable to answer: the AI model service is unavailable right now. Please try again in about 20 seconds.",
		r.Content.Parts[0].Text)
	assert.Equal(t, int64(20), r.CustomMetadata[modelfailover.MetaRetryAfterSeconds])
	assert.Equal(t, 2, d.a.calls())
	assert.Equal(t, 2, d.b.calls())

	custom := newDirect(t, func(c *modelfailover.Config) { c.UnavailableMessage = "Back soon." })
	custom.a.answer, custom.b.answer = d.a.answer, d.a.answer
	for range 2 {
		_, _ = custom.call(t, false)
	}
	resps, err = custom.call(t, false)
	require.NoError(t, err)
	assert.Equal(t, "Back soon.", resps[0].Content.Parts[0].Text)
}

func TestRoutesErrorText(t *testing.T) {
	err := &modelfailover.RoutesError{
		Attempts: []modelfailover.AttemptError{{Route: "a", Class: "http_5xx", Err: unavailable}},
		Skipped:  []string{"b"},
	}
	assert.Equal(t, "modelfailover: every route failed: a: http_5xx (Error 503, Message: down, Status: UNAVAILABLE, Details: []); breaker open: b", err.Error())
	var apiErr genai.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.ErrorIs(t, err, modelfailover.ErrAllRoutesFailed)
}
