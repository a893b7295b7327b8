package callbacks_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/session"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// badReplica is a search service behind a balancer with one bad replica: it answers
// 503 to a share of the requests at random, whatever the load, and counts what it
// gets and what it answered.
type badReplica struct {
	mu       sync.Mutex
	r        *rand.Rand
	failing  float64
	requests atomic.Int64
	ok       atomic.Int64
}

func newBadReplica(t *testing.T, failing float64, seed uint64) (*badReplica, string) {
	b := &badReplica{r: rand.New(rand.NewPCG(seed, 1)), failing: failing}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b.requests.Add(1)
		b.mu.Lock()
		fail := b.r.Float64() < b.failing
		b.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b.ok.Add(1)
		_, _ = w.Write([]byte(`{"hits": 3}`))
	}))
	t.Cleanup(srv.Close)
	return b, srv.URL
}

// Issue 32 (c), through adk-go's runner: a search service fails 60% of its requests
// at random (a bad replica), one turn every half second of the fake clock, each
// calling web_search once. With the throttle at the SRE book's K = 2, 40% accepted is
// below 1/K, and its rule alone would climb to shedding nearly every call. The throttle
// sees that shedding does not raise the accept ratio and stops: over the last minute
// nearly every call reaches the service (counted there). The breaker alone trips on
// the 60% and refuses most calls.
func TestALoadIndependentOutageThroughTheRunner(t *testing.T) {
	t.Parallel()
	const turns, step = 720, 500 * time.Millisecond // six minutes
	lastMinute := turns - int(time.Minute/step)
	run := func(t *testing.T, withThrottle bool) (srv *badReplica, sentLate int64, th *throttle.Throttle, b *breaker.Breaker) {
		srv, url := newBadReplica(t, 0.6, 1)
		fc := clock.NewFake(time.Time{})
		search, err := breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: "web_search", URL: url})
		require.NoError(t, err)
		dep := dependencymap.Dependency{Tools: []string{"web_search"}}
		if withThrottle {
			dep.Throttle = &throttle.Config{}
		}
		deps := dependencymap.MustNew(dependencymap.Config{Clock: fc, Dependencies: map[string]dependencymap.Dependency{"search": dep}})
		cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: fc})
		// The throttle sheds by a draw per invocation, a hash of its ID, and adk-go's IDs
		// are random: seeded draws make the run repeat (one run in three missed the
		// load-independence with random ones).
		r := rand.New(rand.NewPCG(2, 2))
		var mu sync.Mutex
		callbacks.SetInvocationDraw(cb, func(string) uint64 { mu.Lock(); defer mu.Unlock(); return r.Uint64() })
		m := breakertest.MustNewModel(breakertest.ModelConfig{Steps: []breakertest.Step{searchCall(), breakertest.Text("done")}, Repeat: true, DiscardRequests: true})
		a, err := llmagent.New(agentConfig("root", m, search))
		require.NoError(t, err)
		h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}, AppName: "app", UserID: "u"})
		ctx := context.Background()
		for i := range turns {
			if i == lastMinute {
				sentLate = -srv.requests.Load()
			}
			resp, err := h.Sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u"})
			require.NoError(t, err)
			_, err = h.Run(ctx, resp.Session.ID(), "find it")
			require.NoError(t, err)
			fc.Advance(step)
		}
		sentLate += srv.requests.Load()
		th, _ = deps.Throttle("search")
		b, _ = deps.Get("search")
		return srv, sentLate, th, b
	}
	late := int64(turns - lastMinute)
	t.Run("throttle", func(t *testing.T) {
		t.Parallel()
		srv, sentLate, th, b := run(t, true)
		require.Positive(t, th.Shed(throttle.Normal), "the rule did shed before it saw the failures were load-independent")
		share, ok := th.LoadIndependent()
		require.True(t, ok, "the failures were not seen to be load-independent")
		require.Less(t, share, 0.45)
		require.GreaterOrEqual(t, sentLate, late*9/10, "calls of the last minute that reached the service: %d of %d", sentLate, late)
		require.Equal(t, breaker.Closed, b.State(), "the 503s are the throttle's while it is accepting")
		require.InDelta(t, 0.4, float64(srv.ok.Load())/float64(srv.requests.Load()), 0.05)
		// With seeded draws the run repeats.
		again, sentAgain, thAgain, _ := run(t, true)
		require.Equal(t, []int64{srv.requests.Load(), sentLate, int64(th.Shed(throttle.Normal))},
			[]int64{again.requests.Load(), sentAgain, int64(thAgain.Shed(throttle.Normal))}, "requests, sent in the last minute, shed")
	})
	t.Run("breaker alone", func(t *testing.T) {
		t.Parallel()
		_, sentLate, _, _ := run(t, false)
		require.Less(t, sentLate, late/2, "calls of the last minute that reached the service: %d of %d", sentLate, late)
	})
}
