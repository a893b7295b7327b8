package a2aguard_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"
	"google.golang.org/adk/v2/plugin"

	"github.com/agentbreaker/agentbreaker/a2aguard"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// TestUnguardedRemoteReachesEveryTurn is the baseline of issue 33's Found 1, on the
// same rig: remoteagent.NewA2A alone sends every turn's request to a remote that
// answers 503 and hands the transport's text to the user. It shows the counters and
// the transport-text check of the other tests can see what they look for.
func TestUnguardedRemoteReachesEveryTurn(t *testing.T) {
	rem := newRemote(t, nil)
	rem.set(mode503)
	r := newRig(t, rigConfig{shape: transfer, url: rem.srv.URL, unguarded: true})
	leaked := 0
	for range turns {
		turn := r.turn()
		for _, ev := range turn.Events {
			if strings.Contains(ev.ErrorMessage, "unexpected HTTP status") {
				leaked++
			}
		}
	}
	require.EqualValues(t, turns, rem.requests.Load())
	require.Equal(t, turns, leaked, "turns whose user saw the transport's text")
}

// TestAgentToolCannotTakeTheProbe is issue 33's Found 4 for A2A: with the dependency
// named after the agent (the AgentTool's name), the outer call must not take the
// half-open probe of the request inside it. The probe reaches the dead remote, fails,
// and the breaker stays open; it never closes on a remote that is down.
func TestAgentToolCannotTakeTheProbe(t *testing.T) {
	rem := newRemote(t, nil)
	rem.set(mode503)
	r := newRig(t, rigConfig{shape: agentTool, url: rem.srv.URL, dependency: remoteName})
	key, ok := r.deps.DependencyOf(remoteName)
	require.True(t, ok)
	require.Equal(t, remoteName+"-agenttool", key, "the AgentTool's key")
	for range turns {
		answerOf(t, r.turn())
	}
	require.EqualValues(t, breaker.DefaultMinimumCalls, rem.requests.Load())
	for cycle := range 3 {
		r.clock.Advance(r.breaker().RetryAfter() + time.Second)
		for range 10 {
			answerOf(t, r.turn())
		}
		require.EqualValues(t, breaker.DefaultMinimumCalls+cycle+1, rem.requests.Load(), "one probe per cooldown, and it reached the remote")
		require.Equal(t, breaker.Open, r.breaker().State(), "a failed probe reopens")
	}
}

// TestConcurrentTurns runs turns of several sessions at once through one guarded
// remote agent (as an AgentTool), under -race: the breaker stops the requests once it
// trips, whatever the interleaving.
func TestConcurrentTurns(t *testing.T) {
	rem := newRemote(t, nil)
	rem.set(mode503)
	r := newRig(t, rigConfig{shape: agentTool, url: rem.srv.URL})
	const sessions, each = 6, 10
	var wg sync.WaitGroup
	errs := make(chan error, sessions*each)
	for range sessions {
		sid := r.newSession()
		wg.Go(func() {
			for range each {
				turn, err := r.turnIn(sid)
				if err == nil && turn.FinalText() == "" {
					err = errNoAnswer
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// Requests already admitted when the breaker trips still go: at most one per
	// session beyond the volume gate.
	require.LessOrEqual(t, rem.requests.Load(), int64(breaker.DefaultMinimumCalls+sessions))
	require.Equal(t, breaker.Open, r.breaker().State())
}

type answerError string

func (e answerError) Error() string { return string(e) }

const errNoAnswer = answerError("a turn got no answer")

// TestTimeoutBoundsEachRequest: Config.Timeout, not the a2a client's three minutes and
// not the (long) turn deadline, ends a request to a remote that hangs; it counts as
// a timeout.
func TestTimeoutBoundsEachRequest(t *testing.T) {
	rem := newRemote(t, nil)
	rem.set(modeHang)
	r := newRig(t, rigConfig{shape: transfer, url: rem.srv.URL, timeout: 40 * time.Millisecond, turnTTL: time.Minute})
	start := time.Now()
	var last string
	for range turns {
		last = answerOf(t, r.turn())
	}
	require.Less(t, time.Since(start), 30*time.Second, "20 hangs of 40ms each, then refusals")
	require.EqualValues(t, breaker.DefaultMinimumCalls, rem.requests.Load())
	require.Contains(t, last, "recent requests to it timed out")
}

// TestMutatingRemoteOfUnknownOutcome: a remote agent listed in MutatingTools whose
// request timed out gets the outcome-unknown payload, "do not repeat".
func TestMutatingRemoteOfUnknownOutcome(t *testing.T) {
	rem := newRemote(t, nil)
	rem.set(modeHang)
	r := newRig(t, rigConfig{shape: agentTool, url: rem.srv.URL, timeout: 20 * time.Millisecond, mutating: true})
	got := answerOf(t, r.turn())
	require.Contains(t, got, "it is not known whether billing carried out the request")
	require.Contains(t, got, "Do not repeat this action")
}

// TestEventCarriesThePayload: the refusal event's metadata holds agentbreaker's payload
// under MetadataKey, for programs that read events.
func TestEventCarriesThePayload(t *testing.T) {
	r := newRig(t, rigConfig{shape: transfer, url: deadURL(t)})
	for range breaker.DefaultMinimumCalls {
		answerOf(t, r.turn())
	}
	turn := r.turn()
	ev := turn.Events[len(turn.Events)-1]
	require.Equal(t, remoteName, ev.Author)
	p, ok := ev.CustomMetadata[a2aguard.MetadataKey].(map[string]any)
	require.True(t, ok, "metadata: %v", ev.CustomMetadata)
	b, err := json.Marshal(p)
	require.NoError(t, err)
	require.Contains(t, string(b), `"response_type":"agentbreaker.unavailable"`)
	require.Contains(t, string(b), `"error_class":"connection_refused"`)
	require.Contains(t, string(b), `"dependency":"billing"`)
}

func TestConfigErrors(t *testing.T) {
	newCB := func() *callbacks.Callbacks {
		return callbacks.MustNew(callbacks.Config{Dependencies: dependencymap.MustNew(dependencymap.Config{})})
	}
	card := cardFor("http://127.0.0.1:1")
	good := func() a2aguard.Config {
		return a2aguard.Config{Dependency: dep, Callbacks: newCB(), Agent: remoteagent.A2AConfig{Name: remoteName, AgentCard: card}}
	}
	listed := callbacks.MustNew(callbacks.Config{Dependencies: dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{dep: {Tools: []string{remoteName}}},
	})})
	tests := []struct {
		name    string
		edit    func(*a2aguard.Config)
		wantErr string
	}{
		{"ok", func(*a2aguard.Config) {}, ""},
		{"no dependency", func(c *a2aguard.Config) { c.Dependency = "" }, `Config.Dependency = "": required`},
		{"bad dependency", func(c *a2aguard.Config) { c.Dependency = "a\x1bb" }, "Config.Dependency"},
		{"no callbacks", func(c *a2aguard.Config) { c.Callbacks = nil }, "Config.Callbacks = nil"},
		{"no name", func(c *a2aguard.Config) { c.Agent.Name = "" }, `Config.Agent.Name = "": required`},
		{"no card", func(c *a2aguard.Config) { c.Agent.AgentCard = nil }, "Config.Agent.AgentCard = nil"},
		{"timeout too long", func(c *a2aguard.Config) { c.Timeout = 2 * time.Hour }, "Config.Timeout = 2h0m0s"},
		{"reserve too big", func(c *a2aguard.Config) { c.TurnReserve = 0.95 }, "Config.TurnReserve = 0.95"},
		{"agent listed under the dependency", func(c *a2aguard.Config) { c.Callbacks = listed }, `Config.Agent.Name = "billing-agent" is listed as a tool of dependency "billing"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good()
			tt.edit(&cfg)
			a, err := a2aguard.New(cfg)
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, remoteName, a.Name())
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			require.Panics(t, func() { a2aguard.MustNew(cfg) })
		})
	}
}

// TestPageShowsTheEvents: the texts docs/a2a.md quotes are the texts the events carry
// (the jittered delay written "…").
func TestPageShowsTheEvents(t *testing.T) {
	page, err := os.ReadFile("../docs/a2a.md")
	require.NoError(t, err)
	r := newRig(t, rigConfig{shape: transfer, url: deadURL(t)})
	var texts []string
	for i := range breaker.DefaultMinimumCalls + 1 {
		text := answerOf(t, r.turn())
		if i == 0 || i == breaker.DefaultMinimumCalls {
			texts = append(texts, regexp.MustCompile(`about \d+ seconds`).ReplaceAllString(text, "about … seconds"))
		}
	}
	rem := newRemote(t, nil)
	rem.set(modeHang)
	m := newRig(t, rigConfig{shape: transfer, url: rem.srv.URL, timeout: 20 * time.Millisecond, mutating: true})
	texts = append(texts, answerOf(t, m.turn()))
	for _, text := range texts {
		require.Contains(t, string(page), "| "+text+" |")
	}
}

// TestCardProviderThroughTheBreaker: with an AgentCardProvider and a remote that is
// down from the start, the card's fetch fails every turn before any request callback
// runs; the failures count, the breaker opens at the volume gate, and from then on the
// run is answered in words without fetching.
func TestCardProviderThroughTheBreaker(t *testing.T) {
	rem := newRemote(t, nil)
	rem.set(mode503)
	fake := clock.NewFake(time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC))
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fake})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: fake})
	guarded, err := a2aguard.New(a2aguard.Config{Dependency: dep, Callbacks: cb, Agent: remoteagent.A2AConfig{
		Name: remoteName, AgentCardProvider: remoteagent.NewAgentCardProvider(rem.srv.URL + "/.well-known/agent-card.json"),
	}})
	require.NoError(t, err)
	m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(breakertest.Request) breakertest.Step {
		return breakertest.Call("transfer_to_agent", map[string]any{"agent_name": remoteName})
	}})
	root, err := llmagent.New(llmagent.Config{Name: "root", Model: m, SubAgents: []agent.Agent{guarded}})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	sid, err := h.NewSession(context.Background())
	require.NoError(t, err)
	var last *breakertest.Turn
	for range turns {
		last, err = h.Run(context.Background(), sid, "Is invoice 42 paid?")
		require.NoError(t, err)
		for _, ev := range last.Events {
			for _, w := range transportWords {
				require.NotContains(t, ev.ErrorMessage, w)
			}
		}
	}
	require.EqualValues(t, breaker.DefaultMinimumCalls, rem.requests.Load(), "card fetches that reached the remote")
	require.Contains(t, last.FinalText(), "billing is temporarily unavailable")
}
