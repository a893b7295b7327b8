package modelfailover_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model"

	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// Many turns at once while region A fails half its requests: every turn is
// answered, every request is accounted for by exactly one observed attempt, and
// the counters agree with each other.
func TestConcurrentTurnsAccountForEveryRequest(t *testing.T) {
	for _, callbacks := range []bool{false, true} {
		t.Run(map[bool]string{false: "model", true: "callbacks"}[callbacks], func(t *testing.T) {
			a, b := twoRegions(t)
			hc := harnessConfig{regions: []*region{a, b}}
			if callbacks {
				hc.agentModelFor = func(f *modelfailover.Failover) model.LLM { return a.llmThrough(t, f) }
				hc.routes = []modelfailover.Route{{Model: pro, Region: a.name}, b.route()}
			}
			h := newHarness(t, hc)
			const n = 24
			for i := range n {
				r := geminifake.Reply{Text: "answer from us-central1"}
				if i%2 == 1 {
					r.Fail = &geminifake.Failure{Code: 503}
				}
				require.NoError(t, a.server.Enqueue(r))
			}
			var wg sync.WaitGroup
			results := make([]result, n)
			for i := range n {
				wg.Go(func() { results[i] = h.turn(context.Background(), newSession(), i%3 == 0) })
			}
			wg.Wait()

			byRoute := map[any]int{}
			for _, res := range results {
				require.NoError(t, res.err)
				require.NotNil(t, res.last)
				byRoute[res.last.CustomMetadata[modelfailover.MetaRoute]]++
			}
			assert.Equal(t, n, byRoute[routeA]+byRoute[routeB])

			h.events.mu.Lock()
			calls := append([]modelfailover.Call(nil), h.events.calls...)
			h.events.mu.Unlock()
			require.Len(t, calls, n)
			attempts, fallback := 0, 0
			for _, c := range calls {
				attempts += c.Attempts
				if c.ServedBy == modelfailover.ServedFallback {
					fallback++
				}
			}
			assert.Equal(t, a.requests()+b.requests(), attempts)
			assert.Equal(t, byRoute[routeB], fallback)
			assert.Equal(t, b.requests(), fallback)

			stats := h.f.Stats()
			assert.Equal(t, uint64(n), stats.Window.Calls)
			assert.Equal(t, uint64(fallback), stats.Window.Fallback)
			var changes uint64
			for _, fc := range stats.Failovers {
				changes += fc.Count
			}
			assert.Equal(t, int(changes), len(h.events.failovers()))
			assert.Zero(t, h.f.Pending())
		})
	}
}

// The attempt tag that the callbacks put on a request never reaches the server.
func TestAttemptTagIsRemovedBeforeSending(t *testing.T) {
	a, b := twoRegions(t)
	h := newHarness(t, harnessConfig{regions: []*region{a, b}, agentModelFor: func(f *modelfailover.Failover) model.LLM { return a.llmThrough(t, f) },
		routes: []modelfailover.Route{{Model: pro, Region: a.name}, b.route()}})
	require.NoError(t, h.turn(t.Context(), newSession(), false).err)
	log := a.server.Log()
	require.Len(t, log, 1)
	assert.Empty(t, log[0].Header.Get("X-Agentbreaker-Attempt"))
}

// Requests no attempt sent pass through the transport untouched, and a nil base
// means the default transport.
func TestTransportPassesOtherRequestsThrough(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	c := &http.Client{Transport: modelfailover.NewTransport(nil)}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("X-Mine", "kept")
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "7", resp.Header.Get("Retry-After"))
	assert.Equal(t, "kept", got.Get("X-Mine"))
	assert.Equal(t, "kept", req.Header.Get("X-Mine"))
}
