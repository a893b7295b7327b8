package openaifake

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// ErrInvalid is the sentinel wrapped by every error about a bad script value.
var ErrInvalid = errors.New("openaifake: invalid value")

// Config configures a Server. The zero value is ready to use.
type Config struct {
	// Name labels the server in the answers it writes. Defaults to the listening
	// address.
	Name string
	// Text is the answer's text. Defaults to "ok".
	Text string
}

// Failure makes every request fail until [Server.Recover].
type Failure struct {
	// Code is the HTTP status, 400 to 599. Required unless Abort or Hang is set.
	Code int
	// Type is the error body's "type" ("invalid_request_error", …). Defaults to
	// "server_error" for 5xx and "invalid_request_error" otherwise.
	Type string
	// RetryAfter is sent verbatim as the Retry-After header. Defaults to none.
	RetryAfter string
	// RetryAfterMs is sent verbatim as the Retry-After-Ms header. Defaults to none.
	RetryAfterMs string
	// Abort cuts the connection without an answer. Defaults to false.
	Abort bool
	// Hang holds the request until its client gives up or the server closes, then
	// cuts the connection. Defaults to false.
	Hang bool
}

func (f Failure) validate() error {
	if f.Abort || f.Hang {
		return nil
	}
	if f.Code < 400 || f.Code > 599 {
		return fmt.Errorf("%w: Failure.Code %d: want 400 to 599 (or Abort, Hang)", ErrInvalid, f.Code)
	}
	return nil
}

// Filter is an answer stopped by a content filter: status "incomplete" with
// incomplete_details.reason "content_filter".
type Filter struct {
	// Output is the text written before the filter stopped the answer; "" means
	// no output item at all (openaimodel's ErrNoOutputItems).
	Output string
}

// Request is what reached the server: a plain value, the test's to keep.
type Request struct {
	Model      string
	Stream     bool
	RetryCount string // the X-Stainless-Retry-Count header; "" when absent
	Header     http.Header
}

// Server is a local OpenAI Responses API endpoint. It is safe for concurrent use.
type Server struct {
	srv     *httptest.Server
	name    string
	text    string
	closing chan struct{}
	once    sync.Once
	hung    chan Request

	mu      sync.Mutex
	failure *Failure
	filter  *Filter
	log     []Request
}

// New starts a server on 127.0.0.1, or returns an error when no port can be opened.
func New(cfg Config) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("openaifake: listen on 127.0.0.1: %w", err)
	}
	s := &Server{name: cfg.Name, text: cfg.Text, closing: make(chan struct{}), hung: make(chan Request, 64)}
	if s.text == "" {
		s.text = "ok"
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serveHTTP))
	s.srv.Listener.Close()
	s.srv.Listener = ln
	s.srv.Start()
	if s.name == "" {
		s.name = ln.Addr().String()
	}
	return s, nil
}

// MustNew is New for callers that cannot go on without the server; it panics on error.
func MustNew(cfg Config) *Server {
	s, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return s
}

// Start is New for tests: it fails t on error and closes the server when the test ends.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// URL is the base URL for an OpenAI client (openaimodel.ClientConfig.BaseURL).
func (s *Server) URL() string { return s.srv.URL + "/v1/" }

// Transport is the server's own HTTP transport, whose idle connections close with it.
func (s *Server) Transport() http.RoundTripper { return s.srv.Client().Transport }

// Close releases held requests and shuts the server down. Safe to call twice.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closing)
		s.srv.Close()
	})
}

// Fail makes every request fail as f says, until Recover.
func (s *Server) Fail(f Failure) error {
	if err := f.validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failure, s.filter = &f, nil
	return nil
}

// Filter makes every answer one stopped by a content filter, until Recover.
func (s *Server) Filter(f Filter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failure, s.filter = nil, &f
}

// Hung receives each request that a Hang failure holds, once it is held: a test
// waits on it before it moves a fake clock past its time bound. It buffers 64.
func (s *Server) Hung() <-chan Request { return s.hung }

// Recover makes the server answer normally again.
func (s *Server) Recover() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failure, s.filter = nil, nil
}

// Requests is how many requests reached the server.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log)
}

// Log returns the requests that reached the server, in order.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// RetryCounts returns the X-Stainless-Retry-Count of each request, in order.
func (s *Server) RetryCounts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.log))
	for i, r := range s.log {
		out[i] = r.RetryCount
	}
	return out
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	req := Request{Model: in.Model, Stream: in.Stream, RetryCount: r.Header.Get("X-Stainless-Retry-Count"), Header: r.Header.Clone()}
	s.mu.Lock()
	s.log = append(s.log, req)
	f, flt := s.failure, s.filter
	s.mu.Unlock()
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/v1/responses":
		s.writeError(w, http.StatusNotFound, "invalid_request_error", "no such route "+r.URL.Path)
		return
	case err != nil:
		s.writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body")
		return
	}
	if f != nil {
		s.fail(w, r, req, *f)
		return
	}
	resp := s.response(in.Model, s.text, flt)
	if !in.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
		return
	}
	s.stream(w, in.Model, resp, flt)
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, req Request, f Failure) {
	switch {
	case f.Hang:
		select {
		case s.hung <- req:
		default: // nobody is counting arrivals; never block the server on it
		}
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		panic(http.ErrAbortHandler)
	case f.Abort:
		panic(http.ErrAbortHandler)
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.RetryAfterMs != "" {
		w.Header().Set("Retry-After-Ms", f.RetryAfterMs)
	}
	typ := f.Type
	if typ == "" {
		typ = "invalid_request_error"
		if f.Code >= 500 {
			typ = "server_error"
		}
	}
	s.writeError(w, f.Code, typ, "openaifake "+s.name+": HTTP "+strconv.Itoa(f.Code))
}

func (s *Server) writeError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	// openai-go's own retry decision would otherwise see none of these.
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": nil}})
}

// response is a Responses API answer object.
func (s *Server) response(model, text string, flt *Filter) map[string]any {
	status := "completed"
	var details any
	output := []any{message(text)}
	if flt != nil {
		status, details = "incomplete", map[string]any{"reason": "content_filter"}
		output = []any{}
		if flt.Output != "" {
			output = []any{message(flt.Output)}
		}
	}
	return map[string]any{
		"id": "resp_" + s.name, "object": "response", "created_at": 1, "status": status,
		"model": model, "output": output, "incomplete_details": details,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
	}
}

func message(text string) map[string]any {
	return map[string]any{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

// stream writes the answer as the Responses API's server-sent events.
func (s *Server) stream(w http.ResponseWriter, model string, resp map[string]any, flt *Filter) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	seq := 0
	event := func(typ string, v map[string]any) {
		v["type"], v["sequence_number"] = typ, seq
		seq++
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if fl != nil {
			fl.Flush()
		}
	}
	created := map[string]any{}
	for k, v := range resp {
		created[k] = v
	}
	created["status"], created["output"] = "in_progress", []any{}
	event("response.created", map[string]any{"response": created})
	text := s.text
	if flt != nil {
		text = flt.Output
	}
	if text != "" {
		event("response.output_text.delta", map[string]any{"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text})
	}
	if flt != nil {
		event("response.incomplete", map[string]any{"response": resp})
		return
	}
	event("response.completed", map[string]any{"response": resp})
}
