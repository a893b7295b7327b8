package modelfailover

import (
	"context"
	"encoding/json"
	"io"
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
// request's context; the callbacks cannot change the model call's context, so
// they tag the request with a header that the transport removes before sending.

const attemptHeader = "X-Agentbreaker-Attempt"

// recorder keeps the status, headers and body evidence of an attempt's last HTTP
// response.
type recorder struct {
	mu     sync.Mutex
	status int
	header http.Header
	body   bodyEvidence
	// bounds, set by the callbacks for the agent's own model call, are enforced by
	// the transport on the HTTP exchange (the callbacks cannot wrap the call's
	// context); actx is then the exchange's context, whose cause tells a bound ran out.
	bounds bounds
	actx   context.Context
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
}

func (r *recorder) record(resp *http.Response) {
	r.mu.Lock()
	r.status, r.header, r.body = resp.StatusCode, resp.Header.Clone(), bodyEvidence{}
	r.mu.Unlock()
}

func (r *recorder) recordBody(b bodyEvidence) {
	r.mu.Lock()
	r.body = b
	r.mu.Unlock()
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
		}
		if json.Unmarshal(s.buf, &top) == nil {
			ev := bodyEvidence{read: true, candidates: len(top.Candidates)}
			if top.PromptFeedback != nil {
				ev.blockReason = top.PromptFeedback.BlockReason
			}
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
	transportsMade atomic.Bool   // tag requests only once a transport exists to read the tag
	nextAttempt    atomic.Uint64 // attempt ids for the tag
	tagged         sync.Map      // attempt id (string) -> *recorder
)

// tag registers rec under a new attempt id and returns the id, or "" when no
// transport was ever made (nobody would remove the header).
func tag(rec *recorder) string {
	if !transportsMade.Load() {
		return ""
	}
	id := strconv.FormatUint(nextAttempt.Add(1), 10)
	tagged.Store(id, rec)
	return id
}

func untag(id string) {
	if id != "" {
		tagged.Delete(id)
	}
}

// NewTransport wraps base (nil means http.DefaultTransport) so that the Retry-After
// header of a model's HTTP response reaches the failover logic, which then keeps
// the route's breaker open at least that long. Put it on the HTTP client of every
// genai.ClientConfig used by a route:
//
//	cfg := &genai.ClientConfig{APIKey: key, HTTPClient: &http.Client{
//		Transport: modelfailover.NewTransport(http.DefaultTransport)}}
//
// Requests that no failover attempt sent pass through untouched. The returned
// transport is safe for concurrent use.
func NewTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	transportsMade.Store(true)
	return &transport{base: base}
}

type transport struct{ base http.RoundTripper }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec, _ := req.Context().Value(recorderKey{}).(*recorder)
	if id := req.Header.Get(attemptHeader); id != "" {
		if rec == nil {
			if v, ok := tagged.Load(id); ok {
				rec = v.(*recorder)
			}
		}
		// A RoundTripper must not change the caller's request: send a copy.
		req = req.Clone(req.Context())
		req.Header.Del(attemptHeader)
	}
	var w *watchdog
	if rec != nil && (rec.bounds.first > 0 || rec.bounds.gap > 0) {
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
	if rec != nil && resp != nil {
		rec.record(resp)
		if resp.StatusCode == http.StatusOK && resp.Body != nil &&
			strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			resp.Body = &sniffer{ReadCloser: resp.Body, rec: rec}
		}
	}
	return resp, err
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
