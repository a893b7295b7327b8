package soak

// The world: every dependency the agent calls, run in a child process of its own (the
// test binary re-executed with soakRoleEnv=world) so that what the servers keep
// (geminifake and openaifake log every request, the A2A server keeps every session)
// never counts in the agent's heap. The parent drives faults and reads counts over a
// small control API.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/server/adka2a/v2"
	"google.golang.org/adk/v2/session"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/breakertest/openaifake"
)

// Dependencies, as the agent's dependency map names them.
const (
	depOrders  = "orders"  // HTTP: lookup_order (read), place_order (mutating)
	depStock   = "stock"   // HTTP, reached from a workflow tool node: check_stock
	depLedger  = "ledger"  // MCP: get_balance (read), transfer (mutating)
	depBilling = "billing" // A2A remote agent
)

var toolDeps = []string{depOrders, depStock, depLedger, depBilling}

// leakMarker is in every error text a dependency or model server sends: if it ever
// shows in a model request or a user's answer, upstream text leaked.
const leakMarker = "SOAKLEAK"

// Fault modes of a dependency (world.set).
const (
	modeOK      = "ok"
	modeDown    = "down"    // every connection closed before an answer
	modePartial = "partial" // a third 503, a third applied then the connection cut, a third OK
	modeSlow    = "slow"    // every answer 1.5 s late
	mode429     = "429"     // 429 with Retry-After
)

// worldAddrs is what the child prints on its first line of stdout.
type worldAddrs struct {
	Control, Orders, Stock, Ledger, Billing, Gemini, OpenAI string
}

// worldStats is what GET /stats answers.
type worldStats struct {
	Requests map[string]int64    // every request, per dependency
	Applied  map[string]int      // mutations applied, per operation (the op argument)
	Keys     map[string][]string // the idempotency keys each operation's applies carried
	Arrivals map[string][]int64  // unix nanos of each call (not listings, not cancels) per dependency, since the last /stats?reset=1
	Models   map[string]int      // generate requests per model server
}

// world is the child's state.
type world struct {
	mu         sync.Mutex
	mode       map[string]string
	applied    map[string]int
	keys       map[string][]string
	arrivals   map[string][]int64
	requests   map[string]*atomic.Int64
	gemini     *geminifake.Server
	openai     *openaifake.Server
	retryAfter atomic.Int64
}

func newWorld() *world {
	w := &world{mode: map[string]string{}, applied: map[string]int{}, keys: map[string][]string{},
		arrivals: map[string][]int64{}, requests: map[string]*atomic.Int64{}}
	for _, d := range toolDeps {
		w.requests[d] = &atomic.Int64{}
		w.mode[d] = modeOK
	}
	w.retryAfter.Store(3)
	return w
}

func (w *world) getMode(dep string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mode[dep]
}

// apply records one mutation reaching the server's effect.
func (w *world) apply(op, key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.applied[op]++
	w.keys[op] = append(w.keys[op], key)
	return w.applied[op]
}

// front puts a dependency's faults in front of its handler. isCall says whether a
// request is a call of the dependency (an arrival the open-breaker invariant counts).
func (w *world) front(dep string, h http.Handler, isCall func(body []byte) bool) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.requests[dep].Add(1)
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if isCall(body) {
			w.mu.Lock()
			w.arrivals[dep] = append(w.arrivals[dep], time.Now().UnixNano())
			w.mu.Unlock()
		}
		switch w.getMode(dep) {
		case modeDown:
			hijackClose(rw)
			return
		case modeSlow:
			select {
			case <-time.After(1500 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		case mode429:
			rw.Header().Set("Retry-After", strconv.FormatInt(w.retryAfter.Load(), 10))
			http.Error(rw, leakMarker+" quota exceeded for project soak-7 on host "+dep+".internal", http.StatusTooManyRequests)
			return
		case modePartial:
			switch n.Add(1) % 3 {
			case 0:
				http.Error(rw, leakMarker+" upstream connect error or disconnect/reset before headers ("+dep+")", http.StatusServiceUnavailable)
				return
			case 1:
				// Served, then the answer is lost: the effect happened, the caller cannot know.
				rec := &discardWriter{h: http.Header{}}
				h.ServeHTTP(rec, r)
				hijackClose(rw)
				return
			}
		}
		h.ServeHTTP(rw, r)
	})
}

type discardWriter struct {
	h    http.Header
	code int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(c int)           { d.code = c }
func (d *discardWriter) Flush()                      {}

func hijackClose(rw http.ResponseWriter) {
	if hj, ok := rw.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // RST: the request was sent, the answer never comes
			}
			_ = c.Close()
			return
		}
	}
	http.Error(rw, leakMarker, http.StatusBadGateway)
}

func serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = http.Serve(ln, h) }()
	return "http://" + ln.Addr().String(), nil
}

// ordersHandler is an order service that is not idempotent by itself: each POST that
// reaches it is applied, and counted per operation, so the soak sees a second apply.
func (w *world) ordersHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /lookup", func(rw http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(rw, `{"order":%q,"status":"shipped"}`, r.URL.Query().Get("q"))
	})
	mux.HandleFunc("GET /stock", func(rw http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(rw, `{"item":%q,"in_stock":7}`, r.URL.Query().Get("q"))
	})
	mux.HandleFunc("POST /orders", func(rw http.ResponseWriter, r *http.Request) {
		var in struct{ Op string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		n := w.apply("orders:"+in.Op, r.Header.Get("Idempotency-Key"))
		_, _ = fmt.Fprintf(rw, `{"order_id":"o-%s","placed":true,"n":%d}`, in.Op, n)
	})
	return mux
}

func (w *world) mcpHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "ledger", Version: "v1"}, nil)
	type balanceArgs struct {
		Account string `json:"account" jsonschema:"the account"`
	}
	type transferArgs struct {
		Op     string  `json:"op" jsonschema:"the operation id"`
		Amount float64 `json:"amount" jsonschema:"the amount"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "get_balance", Description: "Reads an account's balance."},
		func(ctx context.Context, req *mcp.CallToolRequest, in balanceArgs) (*mcp.CallToolResult, any, error) {
			return nil, map[string]any{"account": in.Account, "balance": 120.5}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "transfer", Description: "Moves money between accounts."},
		func(ctx context.Context, req *mcp.CallToolRequest, in transferArgs) (*mcp.CallToolResult, any, error) {
			key, _ := req.Params.Meta["io.github.agentbreaker/idempotency-key"].(string)
			n := w.apply("ledger:"+in.Op, key)
			return nil, map[string]any{"transferred": true, "n": n}, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
}

func (w *world) a2aHandler() (http.Handler, error) {
	m := breakertest.MustNewModel(breakertest.ModelConfig{DiscardRequests: true,
		Then: func(breakertest.Request) breakertest.Step { return breakertest.Text("Invoice 42 was paid on 3 March.") }})
	inner, err := llmagent.New(llmagent.Config{Name: "billing_agent", Model: m, Instruction: "Answer billing questions.", Mode: llmagent.ModeChat})
	if err != nil {
		return nil, err
	}
	exec := adka2a.NewExecutor(adka2a.ExecutorConfig{
		RunnerConfig: runner.Config{AppName: "billing_agent", Agent: inner, SessionService: session.InMemoryService()},
		RunConfig:    agent.RunConfig{StreamingMode: agent.StreamingModeSSE},
	})
	return a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exec)), nil
}

func jsonRPCMethodIs(methods ...string) func([]byte) bool {
	return func(body []byte) bool {
		var m struct{ Method string }
		if json.Unmarshal(body, &m) != nil {
			return false
		}
		for _, want := range methods {
			if m.Method == want {
				return true
			}
		}
		return false
	}
}

// runWorld is the child's main: it starts every server, prints their addresses as one
// JSON line and serves the control API until its stdin closes (the parent died).
func runWorld() {
	w := newWorld()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "world:", err)
		os.Exit(2)
	}
	var a worldAddrs
	var err error
	oh := w.ordersHandler()
	all := func([]byte) bool { return true }
	if a.Orders, err = serve(w.front(depOrders, oh, all)); err != nil {
		fail(err)
	}
	if a.Stock, err = serve(w.front(depStock, oh, all)); err != nil {
		fail(err)
	}
	if a.Ledger, err = serve(w.front(depLedger, w.mcpHandler(), jsonRPCMethodIs("tools/call"))); err != nil {
		fail(err)
	}
	ah, err := w.a2aHandler()
	if err != nil {
		fail(err)
	}
	if a.Billing, err = serve(w.front(depBilling, ah, jsonRPCMethodIs("SendMessage", "SendStreamingMessage", "message/send", "message/stream"))); err != nil {
		fail(err)
	}
	w.gemini = geminifake.MustNew(geminifake.Config{Name: "gemini-primary", Reply: geminifake.Reply{Text: "primary says ok"}})
	w.openai = openaifake.MustNew(openaifake.Config{Name: "openai-fallback", Text: "fallback says ok"})
	a.Gemini, a.OpenAI = w.gemini.URL(), w.openai.URL()
	if a.Control, err = serve(w.control()); err != nil {
		fail(err)
	}
	b, _ := json.Marshal(a)
	fmt.Println(string(b))
	_, _ = io.Copy(io.Discard, os.Stdin) // the parent holds the pipe; EOF means it is gone
	os.Exit(0)
}

func (w *world) control() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fault", func(rw http.ResponseWriter, r *http.Request) {
		dep, mode := r.URL.Query().Get("dep"), r.URL.Query().Get("mode")
		switch dep {
		case "model":
			switch mode {
			case modeOK:
				w.gemini.Recover()
			case mode429:
				_ = w.gemini.Fail(geminifake.Failure{Code: 429, RetryAfter: "3", RetryDelay: 3 * time.Second,
					Message: leakMarker + " quota exceeded for project soak-7 (gemini)"})
			default:
				_ = w.gemini.Fail(geminifake.Failure{Code: 503, Message: leakMarker + " backend gemini-pool-3.internal unavailable"})
			}
		default:
			w.mu.Lock()
			w.mode[dep] = mode
			w.mu.Unlock()
		}
	})
	mux.HandleFunc("GET /stats", func(rw http.ResponseWriter, r *http.Request) {
		st := worldStats{Requests: map[string]int64{}, Applied: map[string]int{}, Keys: map[string][]string{},
			Arrivals: map[string][]int64{}, Models: map[string]int{}}
		for d, n := range w.requests {
			st.Requests[d] = n.Load()
		}
		w.mu.Lock()
		for k, v := range w.applied {
			st.Applied[k] = v
		}
		for k, v := range w.keys {
			st.Keys[k] = append([]string(nil), v...)
		}
		for k, v := range w.arrivals {
			st.Arrivals[k] = append([]int64(nil), v...)
		}
		w.mu.Unlock()
		st.Models["gemini"] = w.gemini.Requests()
		st.Models["openai"] = len(w.openai.Log())
		_ = json.NewEncoder(rw).Encode(st)
	})
	return mux
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

var _ = strings.Contains
