package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/adk/v2/model/openaimodel"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/breakertest/openaifake"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/probe"
)

// storyPolicy is every breaker's policy in the offline story: a volume gate of 3 calls
// (the defaults are 20 for tools and 50 for models) so that it trips within a few
// turns, and no jitter so that the times printed are the same every run.
var storyPolicy = breaker.Policy{MinimumCalls: 3, Jitter: -1}

// world is the offline run's surroundings: the local CRM and model endpoints it
// starts, and the fake clock the story moves.
type world struct {
	out    io.Writer
	fc     *clock.Fake
	crm    *crmFake
	gemini *geminifake.Server
	openai *openaifake.Server
}

// startWorld starts the fakes and points s at them.
func startWorld(out io.Writer, s *settings) (*world, error) {
	gem, err := geminifake.New(geminifake.Config{Name: "gemini-local"})
	if err != nil {
		return nil, err
	}
	oai, err := openaifake.New(openaifake.Config{Name: "openai-local", Text: "I am answering from the OpenAI-compatible route."})
	if err != nil {
		gem.Close()
		return nil, err
	}
	w := &world{out: out, fc: clock.NewFake(time.Date(2026, 12, 8, 9, 0, 0, 0, time.UTC)), crm: newCRMFake(), gemini: gem, openai: oai}
	s.clock, s.policy = w.fc, storyPolicy
	s.probeSleep = func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() }
	s.crmURL = w.crm.URL()
	s.gemini = gem.ClientConfig
	s.openai = openaimodel.ClientConfig{APIKey: "offline", BaseURL: oai.URL()}
	s.onBreaker = []func(breaker.Event){func(e breaker.Event) {
		fmt.Fprintf(out, "    [breaker %s: %s -> %s: %s]\n", e.Breaker, e.From, e.To, e.Reason)
	}}
	s.onFailover = func(e modelfailover.Event) {
		fmt.Fprintf(out, "    [model failover: %s -> %s (%s)]\n", e.From.Name, e.To.Name, e.Cause)
	}
	s.onProbe = []func(probe.Result){func(r probe.Result) {
		fmt.Fprintf(out, "    [health probe of %s: healthy=%v]\n", r.Dependency, r.Healthy)
	}}
	return w, nil
}

// close stops the fakes; it is safe on a nil world.
func (w *world) close() {
	if w == nil {
		return
	}
	w.crm.Close()
	w.gemini.Close()
	w.openai.Close()
}

// tell drives the outage through the wired agent a.
func (w *world) tell(ctx context.Context, a *app) error {
	out := w.out
	call := func(name string, args map[string]any) geminifake.Reply {
		return geminifake.Reply{Parts: []*genai.Part{genai.NewPartFromFunctionCall(name, args)}}
	}
	say := func(text string) geminifake.Reply { return geminifake.Reply{Text: text} }
	ada := map[string]any{"customer_id": "42"}
	fmt.Fprintln(out, "--- the CRM answers a lookup and stores a note (its key goes with it)")
	steps := []struct {
		q       string
		replies []geminifake.Reply
	}{
		{"Who is customer 42?", []geminifake.Reply{call("crm_lookup", ada), say("Customer 42 is Ada Lovelace, gold tier.")}},
		{"Note that Ada asked for a callback.", []geminifake.Reply{
			call("crm_add_note", map[string]any{"customer_id": "42", "text": "asked for a callback"}), say("Noted.")}},
	}
	for _, st := range steps {
		if err := w.turn(ctx, a, st.q, st.replies...); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "--- the CRM stores the next note but its answer is lost (504): the outcome is unknown")
	w.crm.loseNextReply()
	email := map[string]any{"customer_id": "42", "text": "prefers email"}
	if err := w.turn(ctx, a, "Note that Ada prefers email.", call("crm_add_note", email), call("crm_add_note", email),
		say("I could not confirm the note; it may already be saved, so I did not send it again.")); err != nil {
		return err
	}
	return w.outage(ctx, a, call, say)
}

// outage is the rest of the story: the CRM down and back, then the Gemini route down.
func (w *world) outage(ctx context.Context, a *app, call func(string, map[string]any) geminifake.Reply, say func(string) geminifake.Reply) error {
	out := w.out
	ada := map[string]any{"customer_id": "42"}
	w.fc.Advance(2 * time.Minute) // past the window of the calls above
	fmt.Fprintln(out, "--- the CRM goes down: lookups fail until the breaker opens")
	w.crm.setDown(true)
	for range 4 {
		w.fc.Advance(5 * time.Second)
		if err := w.turn(ctx, a, "Who is customer 42?", call("crm_lookup", ada), say("The CRM is not answering right now; please try again later.")); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "--- the CRM is back; the health probe (GET /health), not a user's call, closes the breaker")
	w.crm.setDown(false)
	w.fc.Advance(31 * time.Second)
	a.prober.ProbeDue(ctx)
	if err := w.turn(ctx, a, "Who is customer 42?", call("crm_lookup", ada), say("Customer 42 is Ada Lovelace, gold tier.")); err != nil {
		return err
	}
	w.fc.Advance(6 * time.Minute) // past the model breakers' window
	fmt.Fprintln(out, "--- the Gemini route fails (503); the OpenAI-compatible route answers, then takes over")
	if err := w.gemini.Fail(geminifake.Failure{Code: 503}); err != nil {
		return err
	}
	for range 4 {
		w.fc.Advance(5 * time.Second)
		if err := w.turn(ctx, a, "Hello, are you there?"); err != nil {
			return err
		}
	}
	st := w.crm.snapshot()
	fmt.Fprintf(out, "CRM: %d lookups (%d during the outage), %d note requests for %d keys, %d health probes\n",
		st.Lookups, st.OutageLookups, st.Notes, len(st.NotesByKey), st.Health)
	fmt.Fprintf(out, "Gemini endpoint: %d requests; OpenAI-compatible endpoint: %d requests\n", w.gemini.Requests(), w.openai.Requests())
	return nil
}

// turn queues the Gemini endpoint's replies, runs one turn in a new session and
// prints what the tools answered and what the model said.
func (w *world) turn(ctx context.Context, a *app, q string, replies ...geminifake.Reply) error {
	if err := w.gemini.Enqueue(replies...); err != nil {
		return err
	}
	fmt.Fprintf(w.out, "%s user: %s\n", w.fc.Now().Format(time.TimeOnly), q)
	created, err := a.sessions.Create(ctx, &session.CreateRequest{AppName: appName, UserID: "u1"})
	if err != nil {
		return err
	}
	res, err := a.turn.Run(ctx, "u1", created.Session.ID(), genai.NewContentFromText(q, genai.RoleUser))
	if err != nil {
		return err
	}
	for _, ev := range res.Events {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			switch {
			case p.FunctionResponse != nil:
				fmt.Fprintf(w.out, "    %s -> %s\n", p.FunctionResponse.Name, summary(p.FunctionResponse.Response))
			case p.Text != "" && ev.Author == "assistant":
				fmt.Fprintf(w.out, "    model (%s): %s\n", ev.CustomMetadata[modelfailover.MetaRoute], p.Text)
			}
		}
	}
	return nil
}

// summary is what a tool answered, in one line: agentbreaker's payloads by their
// type, status and advice, anything else as JSON.
func summary(res map[string]any) string {
	if rt, ok := res["response_type"].(string); ok && strings.HasPrefix(rt, "agentbreaker.") {
		s := rt
		if st, ok := res["status"].(string); ok {
			s += ", status " + st
		}
		if ins, ok := res["instruction"].(string); ok {
			s += ": " + ins
		}
		return s
	}
	b, _ := json.Marshal(res)
	return string(b)
}
