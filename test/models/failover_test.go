package models

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/openaimodel"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/modelfailover/openairoute"
)

const fallbackText = "fallback answer"

// primaryKind names how the failing primary is built, each as docs/model-failover.md
// says to wire it.
type primaryKind string

const (
	oaiDefault    primaryKind = "openai-go default client (MaxRetries 2) + transport"
	oaiRoute      primaryKind = "openairoute"
	geminiRetries primaryKind = "genai with HTTPOptions.RetryOptions + transport"
)

type path string

const (
	modelPath     path = "failover as model"
	callbacksPath path = "callbacks"
)

// setup builds a Failover whose primary is kind against srv (the OpenAI server for the
// OpenAI kinds, the Gemini server otherwise) and whose fallback is Gemini flash against
// fb, on path p, and returns the harness, the Failover and the primary's model name.
func setup(t *testing.T, w *world, p path, kind primaryKind, srv, fb *apiServer, rc ...agent.RunConfig) (*breakertest.Harness, *modelfailover.Failover, string) {
	t.Helper()
	primaryName := gptModel
	if kind == geminiRetries {
		primaryName = "gemini-2.5-pro"
	}
	fallback := modelfailover.Route{Model: flashModel, Region: region, LLM: geminiModel(t, fb, flashModel, modelfailover.NewTransport(nil), false)}
	if p == modelPath {
		var llm model.LLM
		switch kind {
		case oaiDefault:
			llm = openAIDefault(t, srv, modelfailover.NewTransport(nil))
		case oaiRoute:
			llm = openairoute.MustNew(t.Context(), openairoute.Config{Model: gptModel,
				Client: openaimodel.ClientConfig{APIKey: "key", BaseURL: srv.URL + "/v1"}})
		case geminiRetries:
			llm = geminiModel(t, srv, primaryName, modelfailover.NewTransport(nil), true)
		}
		f := w.failover(t, modelfailover.Route{Model: primaryName, Region: region, LLM: llm}, fallback)
		return harness(t, asModel(f), rc...), f, primaryName
	}
	f := w.failover(t, modelfailover.Route{Model: primaryName, Region: region}, fallback)
	var own model.LLM
	switch kind {
	case oaiDefault:
		own = openAIDefault(t, srv, f.Transport(nil))
	case oaiRoute:
		own = openairoute.MustNew(t.Context(), openairoute.Config{Model: gptModel, Failover: f,
			Client: openaimodel.ClientConfig{APIKey: "key", BaseURL: srv.URL + "/v1"}})
	case geminiRetries:
		own = geminiModel(t, srv, primaryName, f.Transport(nil), true)
	}
	return harness(t, asCallbacks(f, own), rc...), f, primaryName
}

func primaryServer(t *testing.T, kind primaryKind) *apiServer {
	if kind == geminiRetries {
		return newGeminiServer(t)
	}
	return newOpenAIServer(t)
}

var (
	allKinds = []primaryKind{oaiDefault, oaiRoute, geminiRetries}
	allPaths = []path{modelPath, callbacksPath}
)

// docs/model-failover.md, "Any model, and who retries": "an attempt that a route's
// breaker admitted sends one request, and the only retry is the failover's next route
// ..., never the SDK's own", for openai-go's default client (MaxRetries 2) wired with the
// transport, for openairoute, and for genai with HTTPOptions.RetryOptions set, on both
// paths. Also: "over a run of turns the failing OpenAI-compatible endpoint gets exactly
// as many requests as a failing Gemini endpoint does" and "a cut connection costs one
// request too".
func TestOneRequestPerAdmittedAttempt(t *testing.T) {
	const turns = 6
	for _, p := range allPaths {
		for _, kind := range allKinds {
			for _, failure := range []string{"503", "cut connection", "503 streamed"} {
				t.Run(fmt.Sprintf("%s/%s/%s", p, kind, failure), func(t *testing.T) {
					var rc agent.RunConfig
					if failure == "503 streamed" {
						rc.StreamingMode = agent.StreamingModeSSE
					}
					w := newWorld(t, false) // default model policy: 6 failures never open it
					srv, fb := primaryServer(t, kind), newGeminiServer(t)
					if failure != "cut connection" {
						srv.set(answer{Status: 503})
					} else {
						srv.set(answer{Drop: true})
					}
					fb.set(answer{Text: fallbackText})
					h, f, primary := setup(t, w, p, kind, srv, fb, rc)
					for i := range turns {
						tr := turn(t, h)
						if got := tr.FinalText(); got != fallbackText {
							t.Fatalf("turn %d: final text %q (error %q), want the fallback's %q", i, got, turnError(tr), fallbackText)
						}
						// "Every response carries agentbreaker_route ... and agentbreaker_failover".
						if md := lastMeta(tr); md == nil || md[modelfailover.MetaRoute] != flashModel+"@"+region || md[modelfailover.MetaFailover] != true {
							t.Errorf("turn %d: response metadata %v, want the fallback's route marked as failed over", i, md)
						}
						if got := srv.count(); got != i+1 {
							t.Fatalf("turn %d: the failing primary received %d requests after %d admitted attempts, want one per attempt", i, got, i+1)
						}
					}
					if got := fb.count(); got != turns {
						t.Errorf("fallback received %d requests, want %d", got, turns)
					}
					srv.mu.Lock()
					for i, st := range srv.streamed {
						if st != (failure == "503 streamed") {
							t.Errorf("request %d streamed=%v, want %v", i, st, failure == "503 streamed")
						}
					}
					srv.mu.Unlock()
					for i, rc := range srv.retryCounts() {
						if kind != geminiRetries && rc != "0" {
							t.Errorf("request %d carried X-Stainless-Retry-Count %q, want 0", i, rc)
						}
					}
					if st := w.breaker(t, primary).State(); st != breaker.Closed {
						t.Errorf("primary breaker %v after %d failures under the default model policy, want closed", st, turns)
					}
					if recs := w.logs.errorRecords(); len(recs) > 0 {
						t.Errorf("unexpected ERROR records (the docs promise no false transport record): %q", recs)
					}
					_ = f
				})
			}
		}
	}
}

// A stated delay, in each of the forms docs/model-failover.md names.
type statedDelay struct {
	name string
	kind primaryKind
	ans  answer
}

var statedDelays = []statedDelay{
	{"Retry-After", oaiDefault, answer{Status: 429, Header: map[string]string{"Retry-After": "40"}}},
	{"Retry-After", oaiRoute, answer{Status: 429, Header: map[string]string{"Retry-After": "40"}}},
	{"Retry-After-Ms", oaiDefault, answer{Status: 429, Header: map[string]string{"Retry-After-Ms": "40000"}}},
	{"Retry-After-Ms", oaiRoute, answer{Status: 429, Header: map[string]string{"Retry-After-Ms": "40000"}}},
	{"RetryInfo", geminiRetries, answer{Status: 429, RetryDelay: "40s"}},
	{"RetryInfo+Retry-After", geminiRetries, answer{Status: 429, RetryDelay: "40s", Header: map[string]string{"Retry-After": "40"}}},
	{"Retry-After 503", oaiDefault, answer{Status: 503, Header: map[string]string{"Retry-After": "40"}}},
}

// docs/model-failover.md: "a stated delay therefore ends the attempt at once: the call
// fails over and the delay floors the route's reopen", and the route tests' summary: "a
// 429 stating 40 s (Retry-After, Retry-After-Ms, or RetryInfo with Retry-After) ends the
// attempt at once, fails over and holds the route 40 s instead of the 30 s cooldown,
// with one probe at +40 s". Also "A 429/503 delay ... is a floor on the open breaker's
// cooldown". The primary's policy opens on the first failure with a fixed 30 s cooldown.
func TestStatedDelayEndsAttemptAndFloorsReopen(t *testing.T) {
	for _, p := range allPaths {
		for _, d := range statedDelays {
			for _, streamed := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/%s/streamed=%v", p, d.kind, d.name, streamed), func(t *testing.T) {
					var rc agent.RunConfig
					if streamed {
						rc.StreamingMode = agent.StreamingModeSSE
					}
					w := newWorld(t, true)
					srv, fb := primaryServer(t, d.kind), newGeminiServer(t)
					srv.set(d.ans)
					fb.set(answer{Text: fallbackText})
					h, f, primary := setup(t, w, p, d.kind, srv, fb, rc)
					br := w.breaker(t, primary)

					start := time.Now()
					tr := turn(t, h)
					if wall := time.Since(start); wall > 3*time.Second {
						t.Errorf("the turn took %v of wall time: the stated delay was slept, not ended at once", wall)
					}
					if got := tr.FinalText(); got != fallbackText {
						t.Fatalf("final text %q (error %q), want the fallback's", got, turnError(tr))
					}
					if got := srv.count(); got != 1 {
						t.Fatalf("primary received %d requests, want 1", got)
					}
					if st := br.State(); st != breaker.Open {
						t.Fatalf("primary breaker %v after a %d, want open", st, d.ans.Status)
					}
					if ra := br.RetryAfter(); ra < 39*time.Second || ra > 41*time.Second {
						t.Errorf("primary reopens in %v, want the stated 40s (not the 30s cooldown)", ra)
					}

					// Past the cooldown but before the stated delay: no probe goes.
					srv.set(answer{Text: "primary answer"})
					w.clk.Advance(35 * time.Second)
					tr = turn(t, h)
					if got := tr.FinalText(); got != fallbackText {
						t.Errorf("at +35s final text %q, want the fallback's", got)
					}
					if got := srv.count(); got != 1 {
						t.Errorf("at +35s the primary received %d requests, want still 1 (the delay floors the reopen)", got)
					}

					// Past the stated delay: one probe, which succeeds and serves.
					w.clk.Advance(6 * time.Second)
					tr = turn(t, h)
					if got := srv.count(); got != 2 {
						t.Errorf("at +41s the primary received %d requests, want 2 (one probe)", got)
					}
					if got := tr.FinalText(); got != "primary answer" && d.kind != geminiRetries {
						t.Errorf("at +41s final text %q, want the primary's", got)
					}
					// "Each change is announced exactly once, in the order the changes happened":
					// away with the class that opened the breaker, back with probe_succeeded.
					wantCause := modelfailover.Cause("http_429")
					if d.ans.Status == 503 {
						wantCause = "http_5xx"
					}
					ev := w.announced()
					if len(ev) != 2 || ev[0].Cause != wantCause || ev[1].Cause != modelfailover.CauseProbeSucceeded {
						t.Errorf("announced %+v, want [%s, %s]", ev, wantCause, modelfailover.CauseProbeSucceeded)
					}
					if st := f.Stats().Serving; !st.Primary {
						t.Errorf("Stats().Serving = %+v after the probe closed the primary, want the primary", st)
					}
					// "The provider's words (the error body) never reach the failover's log
					// records in clear, only a fingerprint".
					if strings.Contains(w.logs.String(), "upstream says") {
						t.Errorf("the endpoint's error text reached the log:\n%s", w.logs.String())
					}
					if recs := w.logs.errorRecords(); len(recs) > 0 {
						t.Errorf("unexpected ERROR records: %q", recs)
					}
				})
			}
		}
	}
}

// docs/model-failover.md: "A 400 and a 401 are the request's and the key's fault
// (classes validation and auth, healthy: they never trip and never fail over)", "with
// the transport or without it", and "a 400's or a 401's error goes back to the caller as
// the SDK made it". The primary's policy would open on its first counted failure.
func TestClientFaultsNeverTripNorFailOver(t *testing.T) {
	type wiring struct {
		name string
		p    path
		llm  func(t *testing.T, srv *apiServer, f *modelfailover.Failover) model.LLM
	}
	wirings := []wiring{
		{"model/default client, no transport", modelPath, func(t *testing.T, srv *apiServer, _ *modelfailover.Failover) model.LLM {
			return openAIDefault(t, srv, http.DefaultTransport)
		}},
		{"model/default client + NewTransport", modelPath, func(t *testing.T, srv *apiServer, _ *modelfailover.Failover) model.LLM {
			return openAIDefault(t, srv, modelfailover.NewTransport(nil))
		}},
		{"model/openairoute", modelPath, func(t *testing.T, srv *apiServer, _ *modelfailover.Failover) model.LLM {
			return openairoute.MustNew(t.Context(), openairoute.Config{Model: gptModel,
				Client: openaimodel.ClientConfig{APIKey: "key", BaseURL: srv.URL + "/v1"}})
		}},
		{"callbacks/default client + Failover.Transport", callbacksPath, func(t *testing.T, srv *apiServer, f *modelfailover.Failover) model.LLM {
			return openAIDefault(t, srv, f.Transport(nil))
		}},
		{"callbacks/default client, no transport", callbacksPath, func(t *testing.T, srv *apiServer, f *modelfailover.Failover) model.LLM {
			return openAIDefault(t, srv, http.DefaultTransport, option.WithMaxRetries(0))
		}},
		{"callbacks/openairoute", callbacksPath, func(t *testing.T, srv *apiServer, f *modelfailover.Failover) model.LLM {
			return openairoute.MustNew(t.Context(), openairoute.Config{Model: gptModel, Failover: f,
				Client: openaimodel.ClientConfig{APIKey: "key", BaseURL: srv.URL + "/v1"}})
		}},
	}
	for _, status := range []int{400, 401} {
		for _, wr := range wirings {
			t.Run(fmt.Sprintf("%d/%s", status, wr.name), func(t *testing.T) {
				w := newWorld(t, true)
				srv, fb := newOpenAIServer(t), newGeminiServer(t)
				srv.set(answer{Status: status})
				fb.set(answer{Text: fallbackText})
				fallback := modelfailover.Route{Model: flashModel, Region: region, LLM: geminiModel(t, fb, flashModel, modelfailover.NewTransport(nil), false)}
				var h *breakertest.Harness
				if wr.p == modelPath {
					f := w.failover(t, modelfailover.Route{Model: gptModel, Region: region, LLM: wr.llm(t, srv, nil)}, fallback)
					h = harness(t, asModel(f))
				} else {
					f := w.failover(t, modelfailover.Route{Model: gptModel, Region: region}, fallback)
					h = harness(t, asCallbacks(f, wr.llm(t, srv, f)))
				}
				const turns = 3
				for i := range turns {
					tr := turn(t, h)
					if tr.FinalText() == fallbackText {
						t.Fatalf("turn %d: a %d failed over to the fallback", i, status)
					}
					// "a 400's or a 401's error goes back to the caller as the SDK made it".
					if e := turnError(tr); !strings.Contains(e, fmt.Sprint(status)) {
						t.Errorf("turn %d: the caller got %q for a %d, want openai-go's error", i, e, status)
					}
				}
				if got := fb.count(); got != 0 {
					t.Errorf("fallback received %d requests, want 0", got)
				}
				if got := srv.count(); got != turns {
					t.Errorf("primary received %d requests over %d turns, want one each", got, turns)
				}
				br := w.breaker(t, gptModel)
				if st := br.State(); st != breaker.Closed {
					t.Errorf("primary breaker %v after %d x %d, want closed", st, turns, status)
				}
				if fails := br.Snapshot().Window.Failures; fails != 0 {
					t.Errorf("primary breaker counted %d failures, want 0", fails)
				}
			})
		}
	}
}

// docs/model-failover.md: "An OpenAI answer stopped by its content filter (status:
// incomplete, reason content_filter, with or without output, JSON or SSE) is a
// safety_block: healthy, returned as it is, never failed over."
func TestContentFilterIsHealthySafetyBlock(t *testing.T) {
	for _, p := range allPaths {
		for _, stream := range []bool{false, true} {
			for _, output := range []string{"", "I can't help with part of"} {
				name := fmt.Sprintf("%s/stream=%v/output=%v", p, stream, output != "")
				t.Run(name, func(t *testing.T) {
					w := newWorld(t, true)
					srv, fb := newOpenAIServer(t), newGeminiServer(t)
					srv.set(answer{ContentFilter: true, Text: output})
					fb.set(answer{Text: fallbackText})
					fallback := modelfailover.Route{Model: flashModel, Region: region, LLM: geminiModel(t, fb, flashModel, modelfailover.NewTransport(nil), false)}
					var cfg llmagent.Config
					if p == modelPath {
						f := w.failover(t, modelfailover.Route{Model: gptModel, Region: region, LLM: openairoute.MustNew(t.Context(), openairoute.Config{Model: gptModel,
							Client: openaimodel.ClientConfig{APIKey: "key", BaseURL: srv.URL + "/v1"}})}, fallback)
						cfg = asModel(f)
					} else {
						f := w.failover(t, modelfailover.Route{Model: gptModel, Region: region}, fallback)
						cfg = asCallbacks(f, openairoute.MustNew(t.Context(), openairoute.Config{Model: gptModel, Failover: f,
							Client: openaimodel.ClientConfig{APIKey: "key", BaseURL: srv.URL + "/v1"}}))
					}
					a, err := llmagent.New(withName(cfg))
					if err != nil {
						t.Fatal(err)
					}
					rc := agent.RunConfig{}
					if stream {
						rc.StreamingMode = agent.StreamingModeSSE
					}
					h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, RunConfig: rc})
					const turns = 3
					for i := range turns {
						tr := turn(t, h)
						if tr.FinalText() == fallbackText {
							t.Fatalf("turn %d: a content filter's answer was failed over", i)
						}
						if output != "" && tr.FinalText() != output {
							t.Errorf("turn %d: final text %q (error %q), want the filtered answer as it is, %q", i, tr.FinalText(), turnError(tr), output)
						}
						if md := lastMeta(tr); md != nil && md[modelfailover.MetaFailover] == true {
							t.Errorf("turn %d: response marked as failed over: %v", i, md)
						}
					}
					if got := fb.count(); got != 0 {
						t.Errorf("fallback received %d requests, want 0", got)
					}
					if got := srv.count(); got != turns {
						t.Errorf("primary received %d requests, want %d", got, turns)
					}
					br := w.breaker(t, gptModel)
					if st := br.State(); st != breaker.Closed {
						t.Errorf("primary breaker %v, want closed", st)
					}
					snap := br.Snapshot()
					if snap.Window.Failures != 0 {
						t.Errorf("primary breaker counted %d failures for content filters, want 0 (healthy)", snap.Window.Failures)
					}
					if snap.Window.Calls != turns {
						t.Errorf("primary breaker measured %d calls, want %d successes (safety blocks are successes)", snap.Window.Calls, turns)
					}
				})
			}
		}
	}
}

func withName(c llmagent.Config) llmagent.Config {
	c.Name = "assistant"
	return c
}
