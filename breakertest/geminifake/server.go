package geminifake

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker"
)

// ConfigError is the error New and the script methods return for an invalid value;
// it unwraps to ErrInvalid.
type ConfigError = agentbreaker.ConfigError

// ErrInvalid is the sentinel every *ConfigError about a bad script value unwraps to.
var ErrInvalid = errors.New("geminifake: invalid value")

// Config configures a Server. The zero value is ready to use.
type Config struct {
	// Name labels the server in error messages it sends, for example the region it
	// stands for. Defaults to the listening address.
	Name string
	// Reply is the default answer. Defaults to the zero Reply ("ok").
	Reply Reply
	// ModelVersion is sent as modelVersion in answers. Defaults to the requested
	// model's name.
	ModelVersion string
}

// Request is what one generate request asked for: a plain value, the test's to
// keep.
type Request struct {
	// Model is the model name from the path ("gemini-2.5-flash").
	Model string
	// Method is "generateContent" or "streamGenerateContent".
	Method string
	// Stream reports a streamGenerateContent request.
	Stream bool
	// Contents is the conversation sent.
	Contents []*genai.Content
	// SystemInstruction is the system instruction sent, if any.
	SystemInstruction *genai.Content
	// Header holds the request headers (the API key is in x-goog-api-key).
	Header http.Header
	// Body is the raw JSON body.
	Body []byte
}

// Server is a local Gemini API endpoint. It is safe for concurrent use.
type Server struct {
	srv     *httptest.Server
	name    string
	version string
	closing chan struct{}
	once    sync.Once

	mu       sync.Mutex // guards the fields below
	reply    Reply
	failure  *Failure
	queue    []Reply
	total    int
	perModel map[string]int
	log      []Request
}

// New starts a server on 127.0.0.1. It returns an error naming the field when cfg
// holds a bad value, or when no port can be opened.
func New(cfg Config) (*Server, error) {
	if err := cfg.Reply.validate("Config.Reply"); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("geminifake: listen on 127.0.0.1: %w", err)
	}
	s := &Server{
		name:     cfg.Name,
		version:  cfg.ModelVersion,
		closing:  make(chan struct{}),
		reply:    cfg.Reply.clone(),
		perModel: map[string]int{},
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

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Server {
	s, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return s
}

// Start is New for tests: it fails t on error and closes the server when the test
// ends.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// URL is the server's base URL, for genai's HTTPOptions.BaseURL.
func (s *Server) URL() string { return s.srv.URL }

// Name returns the server's label.
func (s *Server) Name() string { return s.name }

// Client returns an HTTP client for the server; its idle connections close with it.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// ClientConfig returns a genai client configuration aimed at the server, using the
// Gemini API backend and a placeholder API key. wrap, when not nil, wraps the HTTP
// transport (to add a RoundTripper under test); each call returns a fresh
// configuration with its own http.Client.
func (s *Server) ClientConfig(wrap func(http.RoundTripper) http.RoundTripper) *genai.ClientConfig {
	rt := s.srv.Client().Transport
	if wrap != nil {
		rt = wrap(rt)
	}
	return &genai.ClientConfig{
		APIKey:      "geminifake-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: s.srv.URL},
		HTTPClient:  &http.Client{Transport: rt},
	}
}

// Close releases every held request and shuts the server down. It is safe to call
// more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closing)
		s.srv.Close()
	})
}

// SetReply replaces the default answer.
func (s *Server) SetReply(r Reply) error {
	if err := r.validate("Reply"); err != nil {
		return err
	}
	s.mu.Lock()
	s.reply = r.clone()
	s.mu.Unlock()
	return nil
}

// Fail makes every request fail with f until Recover. Queued replies still go first.
func (s *Server) Fail(f Failure) error {
	if err := (Reply{Fail: &f}).validate("Failure"); err != nil {
		return err
	}
	f.Details = slices.Clone(f.Details)
	s.mu.Lock()
	s.failure = &f
	s.mu.Unlock()
	return nil
}

// Recover ends the failure set by Fail: requests get the default answer again.
func (s *Server) Recover() {
	s.mu.Lock()
	s.failure = nil
	s.mu.Unlock()
}

// Enqueue adds one-shot answers, used in order by the next generate requests ahead
// of any failure or default.
func (s *Server) Enqueue(replies ...Reply) error {
	for i, r := range replies {
		if err := r.validate(fmt.Sprintf("replies[%d]", i)); err != nil {
			return err
		}
	}
	s.mu.Lock()
	for _, r := range replies {
		s.queue = append(s.queue, r.clone())
	}
	s.mu.Unlock()
	return nil
}

// Requests returns how many HTTP requests reached the server, whatever their path.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// RequestsFor returns how many generate requests (streaming or not) named model.
func (s *Server) RequestsFor(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.perModel[model]
}

// Log returns the generate requests received so far, oldest first.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// count records a request that reached the server.
func (s *Server) count() {
	s.mu.Lock()
	s.total++
	s.mu.Unlock()
}

// record counts and logs a generate request.
func (s *Server) record(req Request) {
	s.mu.Lock()
	s.perModel[req.Model]++
	s.log = append(s.log, req)
	s.mu.Unlock()
}

// pick chooses the answer to a valid generate request.
func (s *Server) pick() Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return r
	}
	if s.failure != nil {
		r := s.reply
		f := *s.failure
		r.Fail = &f
		return r
	}
	return s.reply
}
