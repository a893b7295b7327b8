package httptransport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/callpath"
	"github.com/agentbreaker/agentbreaker/retry"
)

// Transport is an http.RoundTripper for the HTTP clients that tools use. For each
// request it finds the dependency by host, asks its breaker and bulkhead before
// dialing, sends the operation's idempotency key, decides the outcome with
// net/http/httptrace and reports it to the breaker. It is safe for concurrent use.
//
// The outcome of a failed round trip:
//
//	no connection, or nothing written on it       FAILED_BEFORE_SEND
//	request written (even in part), then failure  UNKNOWN
//	a response                                    by status (classify.HTTPStatus)
//
// "Written" means net/http reported the request's headers written to a connection
// (httptrace WroteHeaders). Headers may still have sat in a buffer then, but a failure
// after that point cannot prove the server saw nothing, so it is UNKNOWN: only proof
// makes a call FAILED_BEFORE_SEND. A request the base transport refuses because of how
// it was built (no scheme or host: a base URL left unset) is classify's request_config,
// neutral, as it is for a plain http.Client: the breaker never counts it.
type Transport struct {
	cfg  Config
	path *callpath.Path
}

// New returns a Transport, or a *ConfigError naming the first invalid field.
func New(cfg Config) (*Transport, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	return &Transport{cfg: cfg, path: callpath.New(callpath.Nanos(cfg.Clock), nil)}, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Transport {
	t, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return t
}

// Result describes one round trip, for Config.OnResult hooks.
type Result struct {
	// Dependency is the dependency key of the host; "" when the host is not mapped.
	Dependency string
	Method     string
	Host       string
	// Classification is the round trip's outcome.
	Classification classify.Classification
	// Connected reports that a connection was obtained; Wrote that the request was
	// (at least partly) written to it.
	Connected, Wrote bool
	// BreakerState is the breaker's state when the request was admitted or refused;
	// "" when no breaker guards the host.
	BreakerState string
	// Elapsed runs from the start of the round trip to the response headers or the error.
	Elapsed time.Duration
	// Err is the round trip's error, nil when a response arrived.
	Err error
}

// trace records what net/http did with one request. Its hooks run on net/http's
// goroutines, hence the atomics.
type trace struct {
	connected atomic.Bool
	wrote     atomic.Bool
}

func (tr *trace) hooks() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { tr.connected.Store(true) },
		WroteHeaders: func() { tr.wrote.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) { tr.wrote.Store(true) },
	}
}

type recordKey struct{}

// record travels with the request's context so that ClassificationOf can find the
// outcome of a response.
type record struct {
	c classify.Classification
}

// RoundTrip sends one request.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	cfg := &t.cfg
	start := cfg.Clock.Now()
	res := Result{Method: req.Method}
	if req.URL != nil {
		res.Host = req.URL.Host
	}
	b := t.breakerFor(req)
	if b != nil {
		res.Dependency = b.Name()
	}

	call := callpath.Call{Dependency: res.Dependency, Breaker: b}
	release, err := t.admit(req, &call, &res, start)
	if err != nil {
		return nil, err
	}

	tr := &trace{}
	rec := &record{}
	ctx := httptrace.WithClientTrace(req.Context(), tr.hooks())
	ctx = context.WithValue(ctx, recordKey{}, rec)
	ctx, cancel := context.WithCancelCause(ctx)
	var timedOut atomic.Bool
	stopTimer := func() bool { return false }
	if cfg.Timeout > 0 {
		stopTimer = cfg.AfterFunc(cfg.Timeout, func() {
			timedOut.Store(true)
			cancel(ErrTimeout)
		})
	}
	var once sync.Once
	finish := func() {
		once.Do(func() {
			stopTimer()
			cancel(nil)
			release()
		})
	}

	out := req.Clone(ctx)
	t.stampIdempotencyKey(req, out)

	resp, err := cfg.Base.RoundTrip(out)
	res.Connected, res.Wrote = tr.connected.Load(), tr.wrote.Load()
	if err != nil {
		if timedOut.Load() && req.Context().Err() == nil {
			err = errors.Join(ErrTimeout, err)
		}
		finish()
		return nil, t.fail(req, &res, start, err, &call, false)
	}
	t.succeed(req, resp, &res, start, &call, rec, finish)
	return resp, nil
}

// stampIdempotencyKey sets the operation's idempotency key (retry.IdempotencyKeyFrom
// req's context) on out, the request to send, unless the header is disabled ("-") or
// out already carries it.
func (t *Transport) stampIdempotencyKey(req, out *http.Request) {
	if h := t.cfg.IdempotencyHeader; h != "-" {
		if key := retry.IdempotencyKeyFrom(req.Context()); key != "" && out.Header.Get(h) == "" {
			out.Header.Set(h, key)
			noResend(out)
		}
	}
}

// noResend keeps net/http from sending out again by itself. net/http takes a request
// with an Idempotency-Key header as safe to replay, and sends it again on a new
// connection when a reused one dies before the answer: a second send nothing above
// the transport sees, of a call whose outcome is UNKNOWN (found by the soak: an order
// applied twice in one round trip). A request whose body cannot be rewound is never
// resent; GET, HEAD, OPTIONS and TRACE are left as they are.
func noResend(out *http.Request) {
	switch out.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return
	}
	out.GetBody = nil
	if out.Body == nil || out.Body == http.NoBody {
		out.Body = io.NopCloser(strings.NewReader(""))
	}
}

// succeed classifies a round trip that produced a response, reports it to the breaker
// and the hooks, and hands finish (which frees the bulkhead slot and the timer) to the
// response's body, or calls it when there is none.
func (t *Transport) succeed(req *http.Request, resp *http.Response, res *Result, start time.Time, call *callpath.Call, rec *record, finish func()) {
	cfg := &t.cfg
	c := cfg.Classifier.Classify(classify.Input{
		Context: req.Context(), StatusCode: resp.StatusCode, Header: resp.Header, Now: cfg.Clock.Now(),
	})
	rec.c = c
	t.settle(req, call, c)
	if resp.Body == nil {
		finish()
	} else {
		resp.Body = &body{ReadCloser: resp.Body, finish: finish, rec: rec}
	}
	res.Classification = c
	res.Elapsed = cfg.Clock.Now().Sub(start)
	t.notify(*res)
}

// admit runs the call path for the request (the dependency's stated delay, then the
// host's breaker, when one guards the host) and then asks the dependency's bulkhead.
// It returns the function that frees the bulkhead slot; a refusal comes back as the
// round trip's error, already classified and reported.
func (t *Transport) admit(req *http.Request, call *callpath.Call, res *Result, start time.Time) (func(), error) {
	if b := call.Breaker; b != nil {
		if r, ok := t.path.Admit(req.Context(), call); !ok {
			res.BreakerState = r.State.String()
			retry.ReportBreakerState(req.Context(), r.State)
			return nil, t.fail(req, res, start, r.Err, nil, false)
		}
		res.BreakerState = b.State().String()
		retry.ReportBreakerState(req.Context(), b.State())
	}
	release := func() {}
	if bh := t.cfg.Bulkheads[res.Dependency]; bh != nil && res.Dependency != "" {
		rel, err := bh.TryAcquire()
		if err != nil {
			// A saturated bulkhead is evidence that the dependency is slow: the calls
			// already holding its slots are not coming back. It counts against the
			// breaker, as in the callbacks package, although this request never left.
			t.path.Fail(call)
			if _, ok := errors.AsType[classify.LocalRejection](err); !ok {
				err = &bulkheadFull{dependency: res.Dependency, err: err}
			}
			return nil, t.fail(req, res, start, err, nil, true)
		}
		if rel != nil {
			release = rel
		}
	}
	return release, nil
}

// settle ends an admitted call on the path: the breaker hears c, and a delay the
// answer stated holds the dependency.
func (t *Transport) settle(req *http.Request, call *callpath.Call, c classify.Classification) {
	if call != nil && call.Breaker != nil {
		t.path.Settle(req.Context(), call, c, "")
	}
}

// fail classifies a round trip that produced no response, reports it to the breaker
// (when a permit was granted) and wraps the error. full says a full bulkhead
// refused it: still FAILED_BEFORE_SEND, but its verdict counts (the caller reported it
// to the breaker as a failure).
func (t *Transport) fail(req *http.Request, res *Result, start time.Time, err error, call *callpath.Call, full bool) error {
	c := t.cfg.Classifier.Classify(classify.Input{Context: req.Context(), Err: asClientError(req, err), Now: t.cfg.Clock.Now()})
	if errors.Is(err, ErrTimeout) && req.Context().Err() == nil {
		// Our own timeout: evidence against the dependency, unlike the caller's deadline.
		if res.Wrote {
			c = classify.ForClass(classify.ClassTimeout)
		} else {
			c = classify.ForClass(classify.ClassConnectTimeout)
		}
	}
	_, local := errors.AsType[classify.LocalRejection](err)
	switch {
	case !res.Wrote:
		c.Outcome = classify.FailedBeforeSend // proof: nothing reached a connection
	case c.Outcome == classify.FailedBeforeSend && !local:
		// net/http may have retried on a new connection after writing on an old one
		// (it does for requests with an idempotency key); the first write counts.
		c.Outcome = classify.Unknown
	}
	if full {
		c.Verdict = classify.Counts
	}
	t.settle(req, call, c)
	res.Classification = c
	res.Err = err
	res.Elapsed = t.cfg.Clock.Now().Sub(start)
	t.notify(*res)
	return &Error{Dependency: res.Dependency, Classification: c, Err: err}
}

// asClientError returns err as http.Client.Do will return it, inside a *url.Error,
// when it is the base transport's refusal of a request it was handed (no scheme, no
// host, an invalid header): classify.ClassRequestConfig needs that shape, the
// evidence that the words are net/http's and not a dependency's. Any other error is
// classified as it came, so a Classifier's rules see what they always saw.
func asClientError(req *http.Request, err error) error {
	if _, ok := errors.AsType[*url.Error](err); ok || req.URL == nil {
		return err
	}
	ue := &url.Error{Op: req.Method, URL: req.URL.Redacted(), Err: err}
	if _, ok := classify.RequestConfigCause(ue); ok {
		return ue
	}
	return err
}

func (t *Transport) notify(r Result) {
	for _, h := range t.cfg.OnResult {
		h(r)
	}
}

// breakerFor finds the breaker of the request's host: host:port first, then the name.
func (t *Transport) breakerFor(req *http.Request) *breaker.Breaker {
	m := t.cfg.Map
	if m == nil || req.URL == nil {
		return nil
	}
	if b := m.ForHost(req.URL.Host); b != nil {
		return b
	}
	if name := req.URL.Hostname(); name != req.URL.Host {
		return m.ForHost(name)
	}
	return nil
}

// CloseIdleConnections closes the idle connections of the base transport, when it
// has such a method.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.cfg.Base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// body releases the round trip's bulkhead slot and timer when the caller is done.
type body struct {
	io.ReadCloser
	finish func()
	rec    *record
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.finish()
	}
	return n, err
}

func (b *body) Close() error {
	err := b.ReadCloser.Close()
	b.finish()
	return err
}

// ClassificationOf returns the outcome the Transport decided for a round trip: from
// err when it is an *Error, or from the response when a Transport handled it. ok is
// false when neither says; then classify.Classify on the status is the best guess.
func ClassificationOf(resp *http.Response, err error) (c classify.Classification, ok bool) {
	if e, isErr := errors.AsType[*Error](err); isErr {
		return e.Classification, true
	}
	if err == nil && resp != nil {
		if b, isBody := resp.Body.(*body); isBody {
			return b.rec.c, true
		}
		if resp.Request != nil {
			if rec, isRec := resp.Request.Context().Value(recordKey{}).(*record); isRec {
				return rec.c, true
			}
		}
	}
	return classify.Classification{}, false
}

// Classify returns the outcome of a round trip as retry.Func wants it: the Transport's
// classification when there is one, else the classify package's reading of the error
// and status. ctx is the caller's context.
func Classify(ctx context.Context, resp *http.Response, err error) classify.Classification {
	if c, ok := ClassificationOf(resp, err); ok {
		return c
	}
	in := classify.Input{Context: ctx, Err: err}
	if resp != nil {
		in.StatusCode, in.Header = resp.StatusCode, resp.Header
	}
	return classify.Classify(in)
}
