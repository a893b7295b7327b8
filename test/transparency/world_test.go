package transparency_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// world is one run of a shape: the agents, the dependency, the models, and, when
// guarded, the agentbreaker plugin wired as the docs show.
type world struct {
	t       *testing.T
	guarded bool
	cb      *callbacks.Callbacks // nil without agentbreaker
	dep     *dependency
	models  []*scripted
	a2a     []*a2aServer
}

// The dependency map of the guarded run: every tool of the shapes under the
// dependency it calls (docs/tools.md: a plain tool is guarded by naming it there).
var dependencies = map[string]dependencymap.Dependency{
	"crm":      {Tools: []string{"crm_lookup", "crm_orders"}},
	"payments": {Tools: []string{"wire_money"}},
	"tickets":  {Tools: []string{"open_ticket"}},
}

func newWorld(t *testing.T, guarded bool) *world {
	w := &world{t: t, guarded: guarded, dep: newDependency(t)}
	if guarded {
		w.cb = callbacks.MustNew(callbacks.Config{Dependencies: dependencymap.MustNew(dependencymap.Config{Dependencies: dependencies})})
	}
	return w
}

// model registers a scripted model under name.
func (w *world) model(name string, answer func(*model.LLMRequest) *genai.Content) *scripted {
	m := newModel(name, answer)
	w.models = append(w.models, m)
	return m
}

// a2aServer is an A2A or MCP service on a local socket that counts the HTTP requests
// reaching it.
type a2aServer struct {
	name     string
	srv      *httptest.Server
	requests atomic.Int64
}

func (w *world) serve(name string, h http.Handler) *a2aServer {
	s := &a2aServer{name: name}
	s.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h.ServeHTTP(rw, r)
	}))
	w.t.Cleanup(func() {
		s.srv.CloseClientConnections() // an MCP client keeps a stream open
		s.srv.Close()
	})
	w.a2a = append(w.a2a, s)
	return s
}

// shape is one healthy scenario: the same agents, run with and without agentbreaker.
type shape struct {
	name string
	// build returns the root agent; with w.guarded it wires agentbreaker as the
	// docs show for the hop.
	build func(w *world) agent.Agent
	// streaming runs the turns with SSE.
	streaming bool
	// next is the user's message of a turn, given the events of the turn before (nil
	// for the first). Defaults to a question.
	next func(turn int, prev []*session.Event) *genai.Content
	// turns defaults to turnsPerShape.
	turns int
}

const turnsPerShape = 6

// record is everything a user, a model, the session store and a dependency saw in one
// run. Its keys sort in the order IDs should be numbered.
type record map[string]any

func run(t *testing.T, s shape, guarded bool) record {
	t.Helper()
	w := newWorld(t, guarded)
	root := s.build(w)
	sessions := session.InMemoryService()
	cfg := runner.Config{AppName: "transparency", Agent: root, SessionService: sessions}
	if guarded {
		cfg.PluginConfig = runner.PluginConfig{Plugins: []*plugin.Plugin{w.cb.Plugin()}}
	}
	r, err := runner.New(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	created, err := sessions.Create(ctx, &session.CreateRequest{AppName: "transparency", UserID: "user"})
	require.NoError(t, err)
	sid := created.Session.ID()
	rc := agent.RunConfig{}
	if s.streaming {
		rc.StreamingMode = agent.StreamingModeSSE
	}
	n := s.turns
	if n == 0 {
		n = turnsPerShape
	}
	var turns [][]*session.Event
	var prev []*session.Event
	for i := range n {
		msg := genai.NewContentFromText(fmt.Sprintf("Question %d: what does the CRM say?", i+1), genai.RoleUser)
		if s.next != nil {
			if m := s.next(i, prev); m != nil {
				msg = m
			}
		}
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		var evs []*session.Event
		for ev, err := range r.Run(tctx, "user", sid, msg, rc) {
			require.NoError(t, err, "turn %d", i+1)
			if ev != nil {
				require.Empty(t, ev.ErrorMessage, "turn %d: a healthy run has no error event", i+1)
				evs = append(evs, ev)
			}
		}
		cancel()
		turns = append(turns, evs)
		prev = evs
	}
	got, err := sessions.Get(ctx, &session.GetRequest{AppName: "transparency", UserID: "user", SessionID: sid})
	require.NoError(t, err)
	state := map[string]any{}
	for k, v := range got.Session.State().All() {
		state[k] = v
	}
	var stored []*session.Event
	for ev := range got.Session.Events().All() {
		stored = append(stored, ev)
	}
	reqs := map[string]any{}
	for _, m := range w.models {
		reqs[m.name] = m.requests()
	}
	// Parallel calls reach the dependency in any order: the requests compare as a set.
	log := w.dep.requests()
	require.NotEmpty(t, log, "the shape never reached its dependency")
	slices.Sort(log)
	deps := map[string]any{"crm service": log}
	for _, s := range w.a2a {
		deps["http requests at "+s.name] = s.requests.Load()
	}
	return record{
		"1 events":         turns,
		"2 model requests": reqs,
		"3 session events": stored,
		"4 session state":  state,
		"5 dependencies":   deps,
	}
}

// eventsPerTurn counts, per turn, the events the user got and the partial ones among
// them.
func eventsPerTurn(rec record) []string {
	var out []string
	for _, evs := range rec["1 events"].([][]*session.Event) {
		partial := 0
		for _, ev := range evs {
			if ev.Partial {
				partial++
			}
		}
		out = append(out, fmt.Sprintf("%d(%d partial)", len(evs), partial))
	}
	return out
}
