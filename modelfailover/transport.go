package modelfailover

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/adk/v2/agent"
)

// The genai client hides HTTP headers, so a Retry-After header never reaches the
// error it returns. A transport wrapped with NewTransport reads the header off
// the response and hands it to the attempt that sent the request. The failover
// model tells the transport which attempt a request belongs to through the
// request's context. The callbacks cannot change the model call's context, so
// they tag the request with a header that the transport removes before sending;
// they do so only for a Failover whose Transport method made the transport of the
// agent's own model, so that a request sent through any other client never
// carries the tag.

const attemptHeader = "X-Agentbreaker-Attempt"

// recorder keeps the status, headers and body evidence of an attempt's last HTTP
// response.
type recorder struct {
	mu     sync.Mutex
	status int
	header http.Header
	body   bodyEvidence
	tagged atomic.Bool // a transport took the attempt's tag off a request
	// bounds, set by the callbacks for the agent's own model call, are enforced by
	// the transport on the HTTP exchange (the callbacks cannot wrap the call's
	// context); actx is then the exchange's context, whose cause tells a bound ran out.
	bounds bounds
	actx   context.Context
	// The attempt's sends (see sdkretry.go): failed is set once a send got no
	// answer or a failed one, and any later send is refused; sendErr is the
	// transport error of a send answered locally instead.
	sends   int
	refused int
	failed  bool
	sendErr error
	// filtered: a 200 answer of the OpenAI Responses API said its output was
	// stopped by a content filter.
	filtered bool
	f        *Failover // counts refused sends; nil when no Failover made the recorder
	// settleEmpty, set by the callbacks for the agent's own model call, settles
	// that call when its stream was filtered with no output (no callback runs then).
	settleEmpty func()
}

// beginSend reports whether a send of the attempt may leave: not when an
// earlier send of the same attempt failed (that is an SDK's own retry).
func (r *recorder) beginSend() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed {
		return false
	}
	r.sends++
	return true
}

// endSend records how a send ended.
func (r *recorder) endSend(status int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed, r.sendErr = true, err
	} else if status >= 400 {
		r.failed = true
	}
}

// sendError returns the transport error of a send the transport answered
// locally, when no answer came at all.
func (r *recorder) sendError() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != 0 {
		return nil
	}
	return r.sendErr
}

// refusedAny reports whether the transport refused a re-send of the attempt:
// the SDK's error then describes the local answer, not the endpoint's.
func (r *recorder) refusedAny() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused > 0
}

func (r *recorder) contentFiltered() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.filtered
}

// attemptContext returns the context the transport enforced the bounds on, or nil.
func (r *recorder) attemptContext() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.actx
}

// bodyEvidence is what a 200 JSON answer held, read as the client consumed it:
// whether it had candidates, and the prompt's block reason. adk-go's Gemini model
// turns an answer without candidates into a bare error, so this is the only place
// the answer itself can still be seen.
type bodyEvidence struct {
	read        bool // the whole body was read and parsed
	candidates  int
	blockReason string
	// filter: the OpenAI Responses API's answer is "incomplete" because of a
	// content filter (incomplete_details.reason), with or without output.
	filter bool
}

func (r *recorder) record(resp *http.Response) {
	r.mu.Lock()
	r.status, r.header, r.body = resp.StatusCode, resp.Header.Clone(), bodyEvidence{}
	r.mu.Unlock()
}

func (r *recorder) recordBody(b bodyEvidence) {
	r.mu.Lock()
	r.body = b
	r.filtered = r.filtered || b.filter
	r.mu.Unlock()
}

// seen reports whether a transport saw a send of the attempt.
func (r *recorder) seen() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sends > 0 || r.status != 0
}

func (r *recorder) get() (int, http.Header, bodyEvidence) {
	if r == nil {
		return 0, nil, bodyEvidence{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.header, r.body
}

// maxSniff bounds the bytes of a JSON answer kept to read its evidence. An answer
// without candidates is small; a longer one has content and needs no evidence.
const maxSniff = 64 << 10

// sniffer passes a JSON answer through to the client and parses its top level
// once the client has read all of it.
type sniffer struct {
	io.ReadCloser
	rec  *recorder
	buf  []byte
	over bool
	done bool
}

func (s *sniffer) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if !s.over {
		if len(s.buf)+n > maxSniff {
			s.over, s.buf = true, nil
		} else {
			s.buf = append(s.buf, p[:n]...)
		}
	}
	if err == io.EOF && !s.done && !s.over {
		s.done = true
		var top struct {
			Candidates     []json.RawMessage `json:"candidates"`
			PromptFeedback *struct {
				BlockReason string `json:"blockReason"`
			} `json:"promptFeedback"`
			Status            string `json:"status"`
			IncompleteDetails *struct {
				Reason string `json:"reason"`
			} `json:"incomplete_details"`
		}
		if json.Unmarshal(s.buf, &top) == nil {
			ev := bodyEvidence{read: true, candidates: len(top.Candidates)}
			if top.PromptFeedback != nil {
				ev.blockReason = top.PromptFeedback.BlockReason
			}
			ev.filter = top.Status == "incomplete" && top.IncompleteDetails != nil &&
				top.IncompleteDetails.Reason == "content_filter"
			s.rec.recordBody(ev)
		}
		s.buf = nil
	}
	return n, err
}

type recorderKey struct{}

// withRecorder returns the attempt's context actx (derived from ctx) carrying rec.
// It keeps adk's InvocationContext type when the failover model was given one, so
// a model that relies on it still finds it; callback contexts (agent.Context) do
// not support WithContext.
func withRecorder(ctx, actx context.Context, rec *recorder) context.Context {
	inner := context.WithValue(actx, recorderKey{}, rec)
	if _, callback := ctx.(agent.Context); !callback {
		if ic, ok := ctx.(agent.InvocationContext); ok {
			if out := ic.WithContext(inner); out != nil {
				return out
			}
		}
	}
	return inner
}

var (
	taggers     sync.Map      // *Failover -> struct{}: its agent's model sends through its Transport
	nextAttempt atomic.Uint64 // attempt ids for the tag
	tagged      sync.Map      // attempt id (string) -> *recorder
)

// Transport is NewTransport for the HTTP client of the agent's own model, when the
// agent uses f's callbacks (BeforeModel, AfterModel, OnModelError) rather than f as its
// model. Its requests then carry a tag naming their attempt, which the transport
// removes before the request leaves, so that a Retry-After header reaches the
// route's breaker. Without it the callbacks tag nothing: a request sent through a
// client that does not remove the tag would carry it to the model's API. If a tagged
// request still finishes without passing through a transport of this package, f
// stops tagging and logs an error.
//
// The transport finds the attempt of a request in three ways, so any client is
// recognised: the attempt in the request's context (the Failover's own
// attempts), the context of adk's model call when the client passes it on
// unchanged or when the model is wrapped with [CallScoped], and the tag header
// (genai's clients, whatever their context).
func (f *Failover) Transport(base http.RoundTripper) http.RoundTripper {
	taggers.Store(f, struct{}{})
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base, f: f}
}

// tag registers rec under a new attempt id and returns the id, or "" when the
// agent's model does not send through f's Transport (nobody would remove the header).
func (f *Failover) tag(rec *recorder) string {
	if _, ok := taggers.Load(f); !ok {
		return ""
	}
	id := strconv.FormatUint(nextAttempt.Add(1), 10)
	tagged.Store(id, rec)
	return id
}

// untag forgets a finished call's tag. A tag no transport removed went to the model's
// API: stop tagging, loudly, rather than send it again.
func (f *Failover) untag(ctx context.Context, pc *pendingCall) {
	if pc.tag == "" {
		return
	}
	untag(pc.tag)
	if !pc.rec.tagged.Load() {
		if _, was := taggers.LoadAndDelete(f); was {
			f.log.ErrorContext(ctx, "model failover: a model request left without passing through Failover.Transport; "+
				"its attempt tag may have been sent, and requests are no longer tagged (give the agent's model an HTTP client using Failover.Transport)",
				slog.String("route", pc.r.Name))
		}
	}
}

func untag(id string) {
	if id != "" {
		tagged.Delete(id)
	}
}

// NewTransport wraps base (nil means http.DefaultTransport) so that the status and
// headers of a model's HTTP answer (Retry-After, Retry-After-Ms) reach the failover
// logic, which then keeps the route's breaker open at least that long, and so that
// each attempt sends one request: the failover owns retries (an SDK is told not to
// retry a failed answer, and a re-send within a failed attempt is refused in the
// process and counted in [Stats].RefusedRetries). Put it on the HTTP client of
// every route's model, whatever its SDK (genai, openai-go through
// modelfailover/openairoute, or any model.LLM over net/http):
//
//	cfg := &genai.ClientConfig{APIKey: key, HTTPClient: &http.Client{
//		Transport: modelfailover.NewTransport(http.DefaultTransport)}}
//
// Requests that no failover attempt sent pass through untouched, but never with an
// attempt tag. For the agent's own model under the callbacks, use [Failover.Transport].
// The returned transport is safe for concurrent use.
func NewTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base}
}

// transport is NewTransport's and Failover.Transport's RoundTripper; f is the
// Failover whose callbacks' calls it recognises by adk's context (nil for
// NewTransport).
type transport struct {
	base http.RoundTripper
	f    *Failover
}

// RoundTrip sends req, as a failover attempt's when it belongs to one (see
// recorderFor): then the attempt is refused if already sent, bounded in time,
// and its outcome recorded.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec, req := t.recorderFor(req)
	if rec != nil && !rec.beginSend() {
		// An SDK re-sends a request whose attempt already failed: the failover,
		// not the SDK, decides whether and where to try again.
		rec.mu.Lock()
		rec.refused++
		rec.mu.Unlock()
		if rec.f != nil {
			rec.f.refused.Add(1)
		}
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return localAnswer(req, localRetryRefused), nil
	}
	var w *watchdog
	if rec != nil && rec.bounds.any() {
		var actx context.Context
		actx, w = rec.bounds.watch(req.Context())
		rec.mu.Lock()
		rec.actx = actx
		rec.mu.Unlock()
		req = req.WithContext(actx)
	}
	resp, err := t.base.RoundTrip(req)
	if w != nil {
		if resp == nil || resp.Body == nil {
			w.stop()
		} else {
			sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
			resp.Body = &boundedBody{ReadCloser: resp.Body, w: w, sse: sse}
		}
	}
	if rec != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		rec.endSend(status, err)
	}
	if rec != nil && resp != nil {
		observe(rec, resp)
	}
	if rec != nil && err != nil && req.Header.Get(headerStainless) != "" {
		// openai-go retries a transport error after a sleep no clock controls;
		// a local answer it does not retry ends the attempt now, judged on err.
		return localAnswer(req, localSendFailed), nil
	}
	return resp, err
}

// recorderFor finds the failover attempt req belongs to, nil for none: the recorder
// req's context carries, else (for a Failover's own transport) the pending call adk's
// context names, else the attempt the attempt header tags. It marks the attempt as
// tagged. A request with the header comes back as a copy without it.
func (t *transport) recorderFor(req *http.Request) (*recorder, *http.Request) {
	rec, _ := req.Context().Value(recorderKey{}).(*recorder)
	if rec == nil && t.f != nil {
		if key, ok := adkCallKey(req.Context()); ok {
			if pc := t.f.pending.peek(key); pc != nil {
				rec = pc.rec
				rec.tagged.Store(true)
			}
		}
	}
	if id := req.Header.Get(attemptHeader); id != "" {
		if v, ok := tagged.Load(id); ok {
			tr := v.(*recorder)
			tr.tagged.Store(true)
			if rec == nil {
				rec = tr
			}
		}
		// A RoundTripper must not change the caller's request: send a copy.
		req = req.Clone(req.Context())
		req.Header.Del(attemptHeader)
	}
	return rec, req
}

// observe records a response to an attempt's request: it tells an SDK not to retry
// an error status, and wraps a successful JSON or SSE body to read its answer.
func observe(rec *recorder, resp *http.Response) {
	rec.record(resp)
	ct := resp.Header.Get("Content-Type")
	switch {
	case resp.StatusCode >= 400:
		// Tell a Stainless SDK (openai-go) not to retry: it would sleep first.
		resp.Header.Set(headerShouldRetry, "false")
	case resp.StatusCode == http.StatusOK && resp.Body != nil && strings.HasPrefix(ct, "application/json"):
		resp.Body = &sniffer{ReadCloser: resp.Body, rec: rec}
	case resp.StatusCode == http.StatusOK && resp.Body != nil && strings.HasPrefix(ct, "text/event-stream"):
		resp.Body = &sseSniffer{ReadCloser: resp.Body, rec: rec}
	}
}

// boundedBody enforces the callbacks' time bounds on a response body: until the
// first data of a stream (the whole body of an answer that is not streamed) the
// first-response bound runs, then the gap bound from each read that brought data.
// The caller's time with a chunk cannot be told apart here, so it counts in the gap.
type boundedBody struct {
	io.ReadCloser
	w    *watchdog
	sse  bool
	once sync.Once
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err != nil:
		b.w.stopTimers() // the answer is complete (or broken): no bound applies now
	case n > 0 && b.sse:
		b.w.received()
		b.w.waiting()
	}
	return n, err
}

// Close ends the watch and releases the exchange's context; a cause a bound already
// set stays.
func (b *boundedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.w.stop)
	return err
}
