// Command agent runs an adk-go agent through an outage of the service its tools call,
// with agentbreaker installed, with no network and no API key.
//
//	go run ./examples/agent
//
// The agent has two tools, lookup_customer and list_orders, that call a local "CRM"
// over HTTP; both are annotated with the dependency key "crm", so they share one
// breaker. The model is a scripted stand-in (breakertest.Model) that behaves like a
// real one: it calls a tool, calls again when told the tool is unavailable, and answers
// without it when told firmly. The CRM fails for a while and recovers; time is a fake
// clock, so the whole incident takes a moment.
//
// The program prints the incident line by line: each question, each tool call, what
// the CRM answered, the text the model received in its place, and each change of the
// breaker after the call that caused it. It then plays the same outage again through
// the same runner without the plugin, and compares the two.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

func main() {
	if err := run(context.Background(), os.Stdout, hooks{}); err != nil {
		log.Fatal(err)
	}
}

// hooks let a test watch a run from outside: every request the CRM serves, and every
// request the model receives. The zero value watches nothing.
type hooks struct {
	// crm wraps the CRM's handler of one run.
	crm func(guarded bool, h http.Handler) http.Handler
	// model receives the scripted model of one run.
	model func(guarded bool, m *breakertest.Model)
}

// crmPolicy is the CRM's breaker policy in this example; every field it leaves zero
// takes the dependency map's default for tools.
var crmPolicy = breaker.Policy{
	// So small only so that this short demo trips within a few turns (see intro).
	MinimumCalls: 4,
	// No random stretch of the cooldown, so the times printed are the same every run.
	Jitter: -1,
}

// Times of the story: the CRM fails from outageStart to outageEnd.
var (
	start       = time.Date(2026, 11, 29, 14, 2, 0, 0, time.UTC)
	outageStart = start.Add(3 * time.Second)
	outageEnd   = start.Add(110 * time.Second)
)

func run(ctx context.Context, out io.Writer, h hooks) error {
	with, err := incident(ctx, out, true, h)
	if err != nil {
		return err
	}
	// The same questions, model script and outage, through the same runner, without
	// the plugin.
	without, err := incident(ctx, io.Discard, false, h)
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	for _, line := range wrap("", fmt.Sprintf("The outage, %s to %s, played twice through adk-go's runner, with "+
		"the same questions, model script and CRM:", outageStart.Format(time.TimeOnly), outageEnd.Format(time.TimeOnly)), "") {
		fmt.Fprintln(out, line)
	}
	row := func(label string, a, b int64) { fmt.Fprintf(out, "  %-52s %17d %9d\n", label, a, b) }
	fmt.Fprintf(out, "  %-52s %17s %9s\n", "", "with agentbreaker", "without")
	row("tool calls the model made", with.calls, without.calls)
	row("requests that reached the failing CRM", with.crm, without.crm)
	row("answers that showed the model the CRM's error text", with.leaked, without.leaked)
	if without.leak != "" {
		fmt.Fprintln(out, "Without agentbreaker, the model got this for each failed call:")
		for _, line := range wrap("  ", without.leak, "    ") {
			fmt.Fprintln(out, line)
		}
	}
	fmt.Fprintln(out, "The longer the outage, the wider the gap: while the breaker is open, the CRM gets only probes.")
	return nil
}

// counts are what one run did during the outage.
type counts struct {
	calls  int64  // tool calls the model made
	crm    int64  // requests that reached the CRM
	leaked int64  // tool results the model received that held the CRM's text
	leak   string // the first of them, as JSON
}

// incident plays the story once, with or without agentbreaker's plugin, printing it to
// out, and returns what happened during the outage.
func incident(ctx context.Context, out io.Writer, guarded bool, h hooks) (counts, error) {
	fc := clock.NewFake(start)
	s := newStory(out, fc)
	dep := &crm{story: s}
	var handler http.Handler = dep
	if h.crm != nil {
		handler = h.crm(guarded, handler)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()

	deps, err := dependencymap.New(dependencymap.Config{
		PolicyVersion: "example-v1",
		Clock:         fc,
		Dependencies: map[string]dependencymap.Dependency{
			"crm": {Tools: []string{"lookup_customer", "list_orders"}, Policy: crmPolicy},
		},
		OnStateChange: []func(breaker.Event){s.breakerEvent},
	})
	if err != nil {
		return counts{}, err
	}
	b, err := deps.ForTool("lookup_customer")
	if err != nil {
		return counts{}, err
	}
	intro(out, b.Policy())
	guard, err := callbacks.New(callbacks.Config{Dependencies: deps, Clock: fc})
	if err != nil {
		return counts{}, err
	}

	r, sessions, err := newRunner(s, srv.URL, guard, guarded, h)
	if err != nil {
		return counts{}, err
	}
	created, err := sessions.Create(ctx, &session.CreateRequest{AppName: "example", UserID: "u1"})
	if err != nil {
		return counts{}, err
	}
	c := &conversation{ctx: ctx, fc: fc, s: s, r: r, sessionID: created.Session.ID()}
	if err := c.ask(start, "Who is customer 42?"); err != nil {
		return counts{}, err
	}
	during, err := c.outage(dep)
	if err != nil {
		return counts{}, err
	}
	if err := c.ask(at(115), "Who is customer 42?"); err != nil {
		return counts{}, err
	}
	if err := c.notFound(b); err != nil {
		return counts{}, err
	}
	return during, nil
}

// newRunner returns the support agent's runner and its sessions: the CRM's two tools
// against crmURL, the scripted model, and guard's plugin when guarded.
func newRunner(s *story, crmURL string, guard *callbacks.Callbacks, guarded bool, h hooks) (*runner.Runner, session.Service, error) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var tools []tool.Tool
	for _, name := range []string{"lookup_customer", "list_orders"} {
		t, err := crmTool(name, crmURL, client)
		if err != nil {
			return nil, nil, err
		}
		tools = append(tools, t)
	}
	llm := scriptedModel(s)
	if h.model != nil {
		h.model(guarded, llm)
	}
	root, err := llmagent.New(llmagent.Config{
		Name:        "support",
		Description: "Answers questions about customers.",
		Model:       llm,
		Tools:       tools,
		Mode:        llmagent.ModeChat,
	})
	if err != nil {
		return nil, nil, err
	}
	sessions := session.InMemoryService()
	var plugins []*plugin.Plugin
	if guarded {
		// agentbreaker first, so no other plugin can hide a tool error from it.
		plugins = []*plugin.Plugin{guard.Plugin()}
	}
	r, err := runner.New(runner.Config{
		AppName:        "example",
		Agent:          root,
		SessionService: sessions,
		PluginConfig:   runner.PluginConfig{Plugins: plugins},
	})
	if err != nil {
		return nil, nil, err
	}
	return r, sessions, nil
}

// at is the time seconds into the story.
func at(seconds int) time.Time { return start.Add(time.Duration(seconds) * time.Second) }

// conversation is the story's one session with the agent, on the fake clock.
type conversation struct {
	ctx       context.Context
	fc        *clock.Fake
	s         *story
	r         *runner.Runner
	sessionID string
}

// ask moves the clock to t and asks the agent question, running the turn to its end.
func (c *conversation) ask(t time.Time, question string) error {
	c.fc.Advance(t.Sub(c.fc.Now()))
	c.s.user(question)
	msg := genai.NewContentFromText(question, genai.RoleUser)
	for _, err := range c.r.Run(c.ctx, "u1", c.sessionID, msg, agent.RunConfig{}) {
		if err != nil {
			return err
		}
	}
	return nil
}

// outage takes the CRM, dep, down from outageStart to outageEnd while the user asks,
// and returns what happened meanwhile.
func (c *conversation) outage(dep *crm) (counts, error) {
	s := c.s
	c.fc.Advance(outageStart.Sub(c.fc.Now()))
	s.section("the CRM starts failing: it answers every request with 503")
	dep.down.Store(true)
	before := s.counts()
	for _, q := range []struct {
		at       int
		question string
	}{
		{5, "Who is customer 42?"},
		{10, "Who is customer 42?"},
		{15, "Who is customer 42?"},
		{25, "Who is customer 42?"},
		{35, "What has customer 42 ordered?"}, // list_orders: the same dependency
		{45, "Who is customer 42?"},
		{55, "What has customer 42 ordered?"},
	} {
		if err := c.ask(at(q.at), q.question); err != nil {
			return counts{}, err
		}
	}
	c.fc.Advance(outageEnd.Sub(c.fc.Now()))
	s.section("the CRM works again")
	dep.down.Store(false)
	during := s.counts()
	during.calls -= before.calls
	during.leaked -= before.leaked
	during.crm = dep.outage.Load()
	return during, nil
}

// notFound asks for as many missing customers as b's MinimumCalls and shows that the
// CRM's 404 answers leave the breaker as it was.
func (c *conversation) notFound(b *breaker.Breaker) error {
	s := c.s
	s.section("the model asks for customers that do not exist: the CRM answers 404")
	// As many as MinimumCalls: counted as failures, they would open the breaker.
	n := b.Policy().MinimumCalls
	for i := range n {
		if err := c.ask(at(120+5*i), fmt.Sprintf("Who is customer %d?", 100+i)); err != nil {
			return err
		}
	}
	s.event(fmt.Sprintf("%d not-found answers in a row, and the breaker is still %s: a 404 means the "+
		"CRM worked and the model asked for the wrong thing, which never counts as a failure", n, b.State()))
	return nil
}

// intro says what the reader is about to see, and the policy the breaker runs, read
// from the breaker itself.
func intro(out io.Writer, p breaker.Policy) {
	window := "in a rolling " + words(p.Window) + " window"
	if p.WindowCalls > 0 {
		window = fmt.Sprintf("among the last %d calls", p.WindowCalls)
	}
	byDefault := dependencymap.MergePolicy(dependencymap.DefaultToolPolicy, breaker.Policy{}).WithDefaults()
	growth := "the wait stays " + words(p.Cooldown)
	if p.CooldownMultiplier > 1 {
		verb := fmt.Sprintf("multiplies the wait by %g", p.CooldownMultiplier)
		if p.CooldownMultiplier == 2 {
			verb = "doubles the wait"
		}
		var steps []string
		for d := p.Cooldown; ; d = min(time.Duration(float64(d)*p.CooldownMultiplier), p.MaxCooldown) {
			if d >= p.MaxCooldown {
				steps = append(steps, "then "+words(p.MaxCooldown)+" at most")
				break
			}
			steps = append(steps, words(d))
		}
		growth = verb + ": " + strings.Join(steps, ", ")
	}
	for _, paragraph := range []string{
		"An adk-go agent whose two tools call one CRM, through an outage of the CRM. The model is " +
			"scripted, the CRM is a local HTTP server and the clock is fake: no API key, no waiting. Each " +
			"line starts with the fake clock's time. \"the model gets\" is the tool result the model is " +
			"sent; for agentbreaker's answers, the two texts in them, word for word.",
		fmt.Sprintf("The CRM's breaker, shared by both tools, opens when at least %g%% of the calls %s "+
			"failed, once there are %d calls (MinimumCalls). %d is for this short demo only: the default "+
			"is %d, because a handful of failures is not enough evidence that a dependency is down.",
			p.FailureRateThreshold*100, window, p.MinimumCalls, p.MinimumCalls, byDefault.MinimumCalls),
		fmt.Sprintf("While it is open, agentbreaker answers for the CRM. After %s it lets one call "+
			"through, the probe; each failed probe %s.", words(p.Cooldown), growth),
	} {
		for _, line := range wrap("", paragraph, "") {
			fmt.Fprintln(out, line)
		}
		fmt.Fprintln(out)
	}
}
