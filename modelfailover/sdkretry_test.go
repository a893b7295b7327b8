package modelfailover_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/testwait"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"google.golang.org/adk/v2/model/gemini"
)

// resender is a model.LLM over a client of its own that re-sends a failed
// request up to three times with no pause, as an SDK with retries on does. It
// passes the model call's context to its requests unchanged.
type resender struct {
	url    string
	client *http.Client
}

func (r *resender) Name() string { return "resender" }

func (r *resender) GenerateContent(ctx context.Context, _ *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		var last error
		for range 3 {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url, strings.NewReader("{}"))
			resp, err := r.client.Do(req)
			if err != nil {
				last = err
				continue
			}
			resp.Body.Close()
			if resp.StatusCode < 400 {
				yield(&model.LLMResponse{Content: genai.NewContentFromText("resent answer", genai.RoleModel)}, nil)
				return
			}
			last = fmt.Errorf("resender: HTTP %d", resp.StatusCode)
		}
		yield(nil, last)
	}
}

// Any model.LLM is a route: a client's own re-sends of a failed attempt are
// refused in the process and counted, on both paths, and the attempt is judged
// on the endpoint's answer (503), not on the local one.
func TestAnSDKResendWithinAFailedAttemptIsRefusedAndCounted(t *testing.T) {
	for _, callbacks := range []bool{false, true} {
		t.Run(fmt.Sprintf("callbacks=%v", callbacks), func(t *testing.T) {
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				hits.Add(1)
				w.WriteHeader(http.StatusServiceUnavailable)
			}))
			t.Cleanup(srv.Close)
			_, b := twoRegions(t)
			hc := harnessConfig{regions: []*region{b}}
			if callbacks {
				hc.routes = []modelfailover.Route{{Model: "resender", Region: "r"}, b.route()}
				hc.agentModelFor = func(f *modelfailover.Failover) model.LLM {
					return &resender{url: srv.URL, client: &http.Client{Transport: f.Transport(srv.Client().Transport)}}
				}
			} else {
				hc.routes = []modelfailover.Route{{Model: "resender", Region: "r",
					LLM: &resender{url: srv.URL, client: &http.Client{Transport: modelfailover.NewTransport(srv.Client().Transport)}}}, b.route()}
			}
			h := newHarness(t, hc)
			res := h.turn(t.Context(), newSession(), false)
			require.NoError(t, res.err)
			require.Equal(t, []string{"answer from " + b.name}, res.finals)
			require.EqualValues(t, 1, hits.Load(), "one request per admitted attempt")
			require.EqualValues(t, 2, h.f.Stats().RefusedRetries)
			calls := h.events.callList()
			require.Equal(t, modelfailover.Cause(classify.ClassHTTP5xx), calls[len(calls)-1].FallbackCause)
		})
	}
}

// A client whose requests carry adk's call context only inside a wrapper (here a
// request timeout) is still recognised when the model is wrapped with CallScoped.
func TestCallScopedFindsTheAttemptThroughAWrappedContext(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "40")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	t.Cleanup(srv.Close)
	for _, scoped := range []bool{false, true} {
		t.Run(fmt.Sprintf("scoped=%v", scoped), func(t *testing.T) {
			hits.Store(0)
			_, b := twoRegions(t)
			h := newHarness(t, harnessConfig{regions: []*region{b},
				routes: []modelfailover.Route{{Model: "resender", Region: "r"}, b.route()},
				agentModelFor: func(f *modelfailover.Failover) model.LLM {
					// http.Client.Timeout wraps the request's context.
					var llm model.LLM = &resender{url: srv.URL, client: &http.Client{Timeout: 1 << 40,
						Transport: f.Transport(srv.Client().Transport)}}
					if scoped {
						llm = modelfailover.CallScoped(llm)
					}
					return llm
				}})
			res := h.turn(t.Context(), newSession(), false)
			require.NoError(t, res.err)
			if scoped {
				require.EqualValues(t, 1, hits.Load())
				calls := h.events.callList()
				require.Equal(t, modelfailover.Cause(classify.ClassHTTP429), calls[len(calls)-1].FallbackCause)
			} else {
				// Unrecognised: the client's three sends all leave, and the
				// failure is judged only from its error text (unclassified).
				require.EqualValues(t, 3, hits.Load())
			}
		})
	}
}

// sleeper gets one failed answer and then waits for its context, as an SDK that
// ignores X-Should-Retry and sleeps on the stated delay would.
type sleeper struct {
	url    string
	client *http.Client
	sent   chan struct{}
}

func (s *sleeper) Name() string { return "sleeper" }

func (s *sleeper) GenerateContent(ctx context.Context, _ *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader("{}"))
		if resp, err := s.client.Do(req); err == nil {
			resp.Body.Close()
		}
		s.sent <- struct{}{}
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

// Found 3: an attempt timeout that cuts an SDK sleeping on a stated delay keeps
// the delay the transport saw as the floor of the route's reopen (40 s, over the
// policy's 30 s cooldown).
func TestAnAttemptTimeoutKeepsTheStatedDelay(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "40")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	t.Cleanup(srv.Close)
	_, b := twoRegions(t)
	sl := &sleeper{url: srv.URL, client: &http.Client{Transport: modelfailover.NewTransport(srv.Client().Transport)},
		sent: make(chan struct{}, 1)}
	h := newHarness(t, harnessConfig{regions: []*region{b},
		routes: []modelfailover.Route{{Model: "sleeper", Region: "r", LLM: sl}, b.route()},
		mutate: func(c *modelfailover.Config) { c.AttemptTimeout = time.Second }})
	turn := func(sent bool) {
		t.Helper()
		done := make(chan result, 1)
		go func() { done <- h.turn(t.Context(), newSession(), false) }()
		if sent {
			testwait.Recv(t, sl.sent, "the sleeper's request")
			h.clock.waitArmed(1)
			h.clock.Advance(time.Second)
		}
		res := testwait.Recv(t, done, "the turn")
		require.NoError(t, res.err)
		require.Equal(t, []string{"answer from " + b.name}, res.finals)
		calls := h.events.callList()
		require.Equal(t, modelfailover.Cause(classify.ClassTimeout), calls[len(calls)-1].FallbackCause)
	}
	turn(true)
	// The delay the transport saw holds the route, on the call path: the next turn
	// goes to the fallback without asking it.
	turn(false)
	require.Empty(t, sl.sent, "the held route was asked")
	h.clock.Advance(40 * time.Second)
	turn(true) // cut again: the second failure opens the breaker
	br, err := h.deps.ForModel("sleeper", "r")
	require.NoError(t, err)
	require.Equal(t, 40*time.Second, br.RetryAfter())
}

// TestARouteWithoutTheTransportIsNamedOnce (issue 48): a route whose model client was
// built without NewTransport still fails over, and the Failover says once, at WARN,
// which call is missing: without it a stated delay never reaches the breaker.
func TestARouteWithoutTheTransportIsNamedOnce(t *testing.T) {
	a, b := twoRegions(t)
	bare, err := gemini.NewModel(t.Context(), a.model, a.server.ClientConfig(nil))
	require.NoError(t, err)
	h := newHarness(t, harnessConfig{regions: []*region{a, b},
		routes: []modelfailover.Route{{Model: a.model, Region: a.name, LLM: bare}, b.route()}})
	a.fail(t, geminifake.Failure{Code: 503})
	for range 3 {
		res := h.turn(t.Context(), newSession(), false)
		require.NoError(t, res.err)
		require.Equal(t, []string{"answer from " + b.name}, res.finals)
	}
	var named int
	for _, r := range h.logs.records(t, "WARN") {
		if strings.Contains(r["msg"].(string), "modelfailover.NewTransport") {
			named++
			require.Equal(t, a.model+"@"+a.name, r["route"])
		}
	}
	require.Equal(t, 1, named, "one warning names the missing call")
}
