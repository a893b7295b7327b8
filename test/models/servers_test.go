package models

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// answer is how one of the test's API servers answers a request. It is written from the
// APIs' public shapes (the OpenAI Responses API and the Gemini API), not from any
// agentbreaker code.
type answer struct {
	Status int               // 0 means 200 with Text
	Header map[string]string // extra response headers (Retry-After, Retry-After-Ms)
	Body   string            // the error body for Status >= 400; "" for a default one
	Text   string            // the answer's text for a 200
	// ContentFilter answers an OpenAI response stopped by its content filter
	// (status "incomplete", reason "content_filter"), with Text as output when it is set.
	ContentFilter bool
	// RetryDelay, for the Gemini server's errors, adds a google.rpc.RetryInfo detail.
	RetryDelay string
	// Drop closes the connection without answering.
	Drop bool
	// Hang holds the request until the client gives up (or the server closes); each
	// held request is announced on the server's hung channel.
	Hang bool
}

// apiServer is a local HTTP server on 127.0.0.1 that counts every request that reached
// it, records a header of each, and answers from a settable answer.
type apiServer struct {
	*httptest.Server
	requests atomic.Int64

	mu       sync.Mutex
	ans      answer
	retryHdr []string // X-Stainless-Retry-Count of each request, in order
	streamed []bool
	hung     chan struct{}
	done     chan struct{}
	headers  []http.Header // every request's headers, in order (Gemini server)
}

func (s *apiServer) requestHeaders() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// hold blocks a Hang request until its client leaves or the test ends.
func (s *apiServer) hold(r *http.Request) {
	select {
	case s.hung <- struct{}{}:
	default:
	}
	select {
	case <-r.Context().Done():
	case <-s.done:
	}
}

func newAPIServer(t *testing.T) *apiServer {
	return &apiServer{hung: make(chan struct{}, 16), done: make(chan struct{})}
}

func (s *apiServer) set(a answer) {
	s.mu.Lock()
	s.ans = a
	s.mu.Unlock()
}

func (s *apiServer) current() answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ans
}

func (s *apiServer) count() int { return int(s.requests.Load()) }

func (s *apiServer) retryCounts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.retryHdr...)
}

func newLoopback(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("no hijacker")
	}
	c, _, err := hj.Hijack()
	if err == nil {
		_ = c.Close()
	}
}

func writeHeaders(w http.ResponseWriter, a answer) {
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
}

// newOpenAIServer speaks the OpenAI Responses API: POST /v1/responses, JSON or, when the
// body asks for "stream": true, server-sent events.
func newOpenAIServer(t *testing.T) *apiServer {
	s := newAPIServer(t)
	s.Server = newLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		s.requests.Add(1)
		a := s.current()
		s.mu.Lock()
		s.retryHdr = append(s.retryHdr, r.Header.Get("X-Stainless-Retry-Count"))
		s.streamed = append(s.streamed, req.Stream)
		s.mu.Unlock()
		if a.Drop {
			drop(w)
			return
		}
		if a.Hang {
			s.hold(r)
			return
		}
		writeHeaders(w, a)
		if a.Status >= 400 {
			b := a.Body
			if b == "" {
				b = fmt.Sprintf(`{"error":{"message":"upstream says %d","type":"server_error","param":null,"code":null}}`, a.Status)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(a.Status)
			_, _ = io.WriteString(w, b)
			return
		}
		resp := openAIResponse(req.Model, a)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, resp)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		created := `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","model":"` + req.Model + `","status":"in_progress","output":[]}}`
		fmt.Fprintf(w, "event: response.created\ndata: %s\n\n", created)
		seq := 1
		if a.Text != "" {
			fmt.Fprintf(w, "event: response.output_text.delta\ndata: %s\n\n",
				fmt.Sprintf(`{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_1","output_index":0,"content_index":0,"delta":%q}`, seq, a.Text))
			seq++
		}
		final := "response.completed"
		if a.ContentFilter {
			final = "response.incomplete"
		}
		fmt.Fprintf(w, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,\"response\":%s}\n\n", final, final, seq, resp)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	// Registered after the server's Close, so it runs first: held requests end.
	t.Cleanup(func() { close(s.done) })
	return s
}

func openAIResponse(model string, a answer) string {
	status, incomplete := "completed", "null"
	if a.ContentFilter {
		status, incomplete = "incomplete", `{"reason":"content_filter"}`
	}
	output := "[]"
	if a.Text != "" {
		output = fmt.Sprintf(`[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}]`, a.Text)
	}
	return fmt.Sprintf(`{"id":"resp_1","object":"response","created_at":1,"model":%q,"status":%q,"incomplete_details":%s,"output":%s,"usage":{"input_tokens":1,"input_tokens_details":{"cached_tokens":0},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":2}}`,
		model, status, incomplete, output)
}

// newGeminiServer speaks the Gemini API: POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent?alt=sse.
func newGeminiServer(t *testing.T) *apiServer {
	s := newAPIServer(t)
	s.Server = newLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		s.requests.Add(1)
		stream := strings.HasSuffix(r.URL.Path, ":streamGenerateContent")
		a := s.current()
		s.mu.Lock()
		s.streamed = append(s.streamed, stream)
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		if a.Drop {
			drop(w)
			return
		}
		if a.Hang {
			s.hold(r)
			return
		}
		writeHeaders(w, a)
		if a.Status >= 400 {
			b := a.Body
			if b == "" {
				details := ""
				if a.RetryDelay != "" {
					details = fmt.Sprintf(`,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":%q}]`, a.RetryDelay)
				}
				b = fmt.Sprintf(`{"error":{"code":%d,"message":"upstream says %d","status":%q%s}}`, a.Status, a.Status, grpcStatus(a.Status), details)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(a.Status)
			_, _ = io.WriteString(w, b)
			return
		}
		text := a.Text
		if text == "" {
			text = "gemini answer"
		}
		resp := fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":[{"text":%q}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2}}`, text)
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", resp)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, resp)
	}))
	// Registered after the server's Close, so it runs first: held requests end.
	t.Cleanup(func() { close(s.done) })
	return s
}

func grpcStatus(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 503:
		return "UNAVAILABLE"
	default:
		return "INTERNAL"
	}
}
