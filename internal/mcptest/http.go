package mcptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTP serves a Server over streamable HTTP on a local socket. It is safe for
// concurrent use.
type HTTP struct {
	Server *Server
	addr   string
	h      http.Handler

	mu       sync.Mutex
	srv      *httptest.Server // nil while down
	hangList bool
	finTool  string
	finLeft  int            // closes left for finTool; negative: every request
	finReset bool           // reset (RST) instead of closing gracefully
	finKeep  bool           // close before applying the charge
	requests map[string]int // tools/call POSTs received, by tool
	all      int            // every request received
	auth     string         // the Authorization header of the last request
}

// NewHTTP starts s on a free local port; the test's cleanup stops it.
func NewHTTP(t testing.TB, s *Server) *HTTP {
	t.Helper()
	h := &HTTP{Server: s, requests: map[string]int{}}
	h.h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.MCP }, &mcp.StreamableHTTPOptions{Stateless: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	h.start(ln)
	t.Cleanup(func() {
		s.Release()
		h.Down()
	})
	return h
}

// URL is the MCP endpoint.
func (h *HTTP) URL() string { return "http://" + h.addr + "/mcp" }

func (h *HTTP) start(ln net.Listener) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(h.serve))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	h.mu.Lock()
	h.srv = srv
	h.mu.Unlock()
}

// Down stops the server: open connections are closed and new ones refused.
func (h *HTTP) Down() {
	h.mu.Lock()
	srv := h.srv
	h.srv = nil
	h.mu.Unlock()
	if srv != nil {
		srv.CloseClientConnections()
		srv.Close()
	}
}

// Up serves again on the same address, as after a restart. The handler is stateless
// (no session outlives a request), so no server goroutine outlives a test.
func (h *HTTP) Up(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	h.h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.Server.MCP }, &mcp.StreamableHTTPOptions{Stateless: true})
	h.start(ln)
}

// CloseAfterAccept makes the server read the next n tools/call requests of tool (all
// of them when n is negative), count them, apply a charge, and close the connection
// gracefully (FIN) without answering: the server accepted the request and the client
// cannot know whether it was applied.
func (h *HTTP) CloseAfterAccept(tool string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.finTool, h.finLeft, h.finReset, h.finKeep = tool, n, false, false
}

// DropAfterAccept is CloseAfterAccept for a server that closes before applying the
// charge: the client cannot know, and the charge was not made.
func (h *HTTP) DropAfterAccept(tool string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.finTool, h.finLeft, h.finReset, h.finKeep = tool, n, false, true
}

// ResetAfterAccept is CloseAfterAccept with a reset (RST) instead of a graceful close.
func (h *HTTP) ResetAfterAccept(tool string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.finTool, h.finLeft, h.finReset, h.finKeep = tool, n, true, false
}

// HangList makes tools/list requests hang until the client gives up (or the test
// ends); false answers them again.
func (h *HTTP) HangList(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hangList = on
}

// Authorization returns the Authorization header of the last request.
func (h *HTTP) Authorization() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.auth
}

// AllRequests returns how many HTTP requests reached the server.
func (h *HTTP) AllRequests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.all
}

// Requests returns how many tools/call requests for tool reached the server.
func (h *HTTP) Requests(tool string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests[tool]
}

func (h *HTTP) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.all++
	h.auth = r.Header.Get("Authorization")
	h.mu.Unlock()
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string         `json:"name"`
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		ok := json.Unmarshal(body, &msg) == nil
		h.mu.Lock()
		hang := h.hangList && ok && msg.Method == "tools/list"
		h.mu.Unlock()
		if hang {
			h.Server.mu.Lock()
			release := h.Server.release
			h.Server.mu.Unlock()
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		if ok && msg.Method == "tools/call" {
			h.mu.Lock()
			h.requests[msg.Params.Name]++
			fin := h.finTool == msg.Params.Name && h.finLeft != 0
			reset, keep := h.finReset, h.finKeep
			if fin && h.finLeft > 0 {
				h.finLeft--
			}
			h.mu.Unlock()
			if fin {
				h.Server.RecordMeta(msg.Params.Name, msg.Params.Meta)
				if msg.Params.Name == Charge && !keep {
					h.Server.Apply(msg.Params.Meta) // accepted and applied
				}
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					if tc, ok := conn.(*net.TCPConn); ok && reset {
						tc.SetLinger(0) // close sends RST
					}
					conn.Close()
				}
				return
			}
		}
	}
	h.mu.Lock()
	handler := h.h
	h.mu.Unlock()
	handler.ServeHTTP(w, r)
}
