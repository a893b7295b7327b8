package mcpguard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/auth"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/classify"
)

const methodCallTool = "tools/call"

// guardTransport returns cfg's transport with the send-once guard and a copy of cfg
// that uses it. A streamable HTTP transport is guarded at its HTTP client, because its
// connection has methods only the SDK can implement (wrapping the connection would
// hide them); any other transport (stdio, in-memory, custom) is guarded at its
// connection's Write. Auth, which mcptoolset applies only to a streamable transport
// it can see, is applied here, below the guard.
func guardTransport(cfg mcptoolset.Config) (mcptoolset.Config, *trackTransport, error) {
	t := cfg.Transport
	if t == nil {
		t = &mcp.StreamableClientTransport{Endpoint: cfg.Endpoint}
	}
	closed := &atomic.Bool{}
	st, streamable := t.(*mcp.StreamableClientTransport)
	if cfg.Auth != nil && !streamable {
		return cfg, nil, fmt.Errorf("mcpguard: Config.Toolset.Auth requires a streamable HTTP transport; "+
			"set Endpoint or pass a *mcp.StreamableClientTransport (got %T)", t)
	}
	if streamable {
		cp := *st
		client := &http.Client{}
		if st.HTTPClient != nil {
			*client = *st.HTTPClient
		}
		base := client.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		if cfg.Auth != nil {
			base = &auth.Transport{Provider: cfg.Auth, Base: base}
		}
		client.Transport = &onceRoundTripper{base: base, closed: closed, oauth: st.OAuthHandler != nil}
		cp.HTTPClient = client
		t = &cp
	} else {
		t = &onceTransport{inner: t, closed: closed}
	}
	tr := &trackTransport{inner: t, closed: closed}
	cfg.Transport, cfg.Endpoint, cfg.Auth = tr, "", nil
	return cfg, tr, nil
}

// ErrClosed is returned for every request a Toolset's transport is asked to send
// after Close. It is a local refusal (classify.LocalRejection): the server never saw
// the call, so it does not count against the dependency.
var ErrClosed error = closedError{}

type closedError struct{}

func (closedError) Error() string           { return "mcpguard: tool set closed" }
func (closedError) RejectedLocally() string { return string(classify.ClassCanceled) }

// maxTracked bounds the connections kept for Close: adk-go replaces a session only
// after a failure and closes the one it replaces, so old entries are closed already.
const maxTracked = 16

// trackTransport keeps the connections it makes, unchanged, so that Close can end
// them: adk-go's tool set has no Close of its own, and the runner never ends a
// plugin's or a tool set's goroutines.
// A streamable HTTP session of the newer protocol needs no connection, so closing
// its connection does not stop it from posting: the guard's HTTP client refuses every
// request once closed is set.
type trackTransport struct {
	inner  mcp.Transport
	closed *atomic.Bool
	mu     sync.Mutex
	conns  []mcp.Connection
}

func (t *trackTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if t.closed.Load() {
		return nil, ErrClosed
	}
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		c.Close()
		return nil, ErrClosed
	}
	if len(t.conns) == maxTracked {
		t.conns = slices.Delete(t.conns, 0, 1)
	}
	t.conns = append(t.conns, c)
	return c, nil
}

// close closes every connection and refuses new ones.
func (t *trackTransport) close() error {
	t.mu.Lock()
	t.closed.Store(true)
	conns := t.conns
	t.conns = nil
	t.mu.Unlock()
	var errs []error
	for _, c := range conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// onceTransport guards the connections of a transport other than streamable HTTP.
type onceTransport struct {
	inner  mcp.Transport
	closed *atomic.Bool
}

func (t *onceTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &onceConn{Connection: c, closed: t.closed}, nil
}

type onceConn struct {
	mcp.Connection
	closed *atomic.Bool

	// The writes of mutating calls waiting for their answer, by request ID; n lets
	// Read skip the lock when there are none (read-only traffic).
	n       atomic.Int32
	mu      sync.Mutex
	pending map[jsonrpc.ID]*onceContext
}

// Write refuses a tools/call write of a mutating call while an earlier write of the
// same call is unanswered.
func (c *onceConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if c.closed.Load() {
		return ErrClosed
	}
	once := onceOf(ctx)
	if once == nil {
		return c.Connection.Write(ctx, msg)
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != methodCallTool {
		return c.Connection.Write(ctx, msg) // the refresher's ping, a new session's initialize
	}
	if err := once.claim(); err != nil {
		return err
	}
	c.track(req.ID, once) // before the write: the answer may come at once
	err := c.Connection.Write(ctx, msg)
	if err != nil {
		c.answered(req.ID, false)
	}
	once.settle(err, false)
	return err
}

// Read notes the answers to tracked writes.
func (c *onceConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil && c.n.Load() > 0 {
		if resp, ok := msg.(*jsonrpc.Response); ok {
			c.answered(resp.ID, true)
		}
	}
	return msg, err
}

func (c *onceConn) track(id jsonrpc.ID, once *onceContext) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending = map[jsonrpc.ID]*onceContext{}
	}
	c.pending[id] = once
	c.n.Store(int32(len(c.pending)))
}

// answered forgets the write id and, when the server answered it, says so to its call.
func (c *onceConn) answered(id jsonrpc.ID, answer bool) {
	c.mu.Lock()
	once := c.pending[id]
	delete(c.pending, id)
	c.n.Store(int32(len(c.pending)))
	c.mu.Unlock()
	if once != nil && answer {
		once.answer()
	}
}

// onceRoundTripper guards a streamable HTTP transport: each JSON-RPC message is one
// POST made with the writing call's context. It also reads the HTTP status of every
// POST's answer (see httpStatus).
type onceRoundTripper struct {
	base   http.RoundTripper
	closed *atomic.Bool
	oauth  bool // the transport has an OAuthHandler: 401 and 403 are its to answer
}

func (rt *onceRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if rt.closed.Load() {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, ErrClosed
	}
	if req.Method != http.MethodPost {
		return rt.base.RoundTrip(req) // the standalone SSE stream's GET, the session's DELETE
	}
	once := onceOf(req.Context())
	if once == nil {
		return rt.httpStatus(rt.base.RoundTrip(req))
	}
	req, id, call, err := isCallTool(req)
	if err != nil {
		return nil, err
	}
	if !call {
		return rt.httpStatus(rt.base.RoundTrip(req))
	}
	if err := once.claim(); err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper must close the body, also on error
		}
		return nil, err
	}
	resp, err := rt.httpStatus(rt.base.RoundTrip(req))
	// 404 is the server saying it does not know the session: it did not run the call,
	// and the refresher will send it again on a new session.
	once.settle(err, err == nil && resp.StatusCode == http.StatusNotFound)
	if err == nil && resp.StatusCode < 300 {
		if w := watchAnswer(resp, once, id); w != nil {
			resp.Body = w
		}
	}
	return resp, err
}

// httpStatus turns an answer whose HTTP status says the server (or a proxy in front
// of it) failed or refused the request into an error that carries the status's
// classification, as for an HTTP tool (classify.HTTPStatus): 5xx is http_5xx (503
// FAILED, the rest UNKNOWN), 429 http_429 and 408 http_408 (FAILED), all counted,
// with the Retry-After header as the delay; 401, 403 and 407 are auth (FAILED,
// healthy, a configuration fault). The SDK would otherwise report them as text ("Service
// Unavailable"), which no classifier can tell from anyone else's words.
//
// The error's text is fixed and holds nothing of the answer's body. The SDK wraps it
// with %w, and it is not one of the errors adk-go's connection refresher resends on,
// so a call is not sent again for it. Other statuses are the SDK's to read: 404 (the
// session is gone: the refresher reconnects), 400 with a JSON-RPC error, and 401/403
// when an OAuthHandler is set, which the SDK answers by authorizing.
func (rt *onceRoundTripper) httpStatus(resp *http.Response, err error) (*http.Response, error) {
	if err != nil || resp == nil {
		return resp, err
	}
	code := resp.StatusCode
	switch {
	case code >= 500 && code <= 599, code == http.StatusTooManyRequests, code == http.StatusRequestTimeout,
		code == http.StatusProxyAuthRequired:
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		if rt.oauth {
			return resp, nil
		}
	default:
		return resp, nil
	}
	cls := classify.HTTPStatus(code, resp.Header, time.Time{})
	// Drain a little so the connection can be reused, then let the answer go.
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	resp.Body.Close()
	return nil, &classify.ToolError{Classification: cls, Message: "mcpguard: the MCP server answered HTTP " +
		strconv.Itoa(code) + " " + http.StatusText(code)}
}

// maxDrain bounds what httpStatus reads of a failing answer's body before closing it.
const maxDrain = 4 << 10

// isCallTool reports whether req posts a tools/call request and returns its ID and
// the request to send: req itself when its body can be read again through GetBody
// (the SDK's requests can), else a copy holding the body read here.
func isCallTool(req *http.Request) (*http.Request, jsonrpc.ID, bool, error) {
	var data []byte
	var err error
	if req.GetBody != nil {
		var body io.ReadCloser
		if body, err = req.GetBody(); err == nil {
			data, err = io.ReadAll(body)
			body.Close()
		}
	} else if req.Body != nil {
		data, err = io.ReadAll(req.Body)
		req.Body.Close()
		cp := req.Clone(req.Context())
		cp.Body = io.NopCloser(bytes.NewReader(data))
		req = cp
	}
	if err != nil || !bytes.Contains(data, []byte(methodCallTool)) {
		return req, jsonrpc.ID{}, false, err
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return req, jsonrpc.ID{}, false, nil // not JSON-RPC: not a call the guard knows
	}
	r, ok := msg.(*jsonrpc.Request)
	if !ok || r.Method != methodCallTool {
		return req, jsonrpc.ID{}, false, nil
	}
	return req, r.ID, true, nil
}
