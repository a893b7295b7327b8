package models

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// statusErr is a provider error of our own that says its status the way
// docs/model-failover.md's providers table asks: HTTPStatusCode() and HTTPHeader().
type statusErr struct {
	code int
	hdr  http.Header
}

func (e *statusErr) Error() string           { return "custom provider: HTTP " + strconv.Itoa(e.code) }
func (e *statusErr) HTTPStatusCode() int     { return e.code }
func (e *statusErr) HTTPHeader() http.Header { return e.hdr }

// httpModel is "a model.LLM of your own over net/http": it POSTs to the Gemini server's
// path and, like many hand-written clients, re-sends a failed request resend times at
// once. typed makes its error a statusErr; otherwise it is a plain error with no status.
type httpModel struct {
	name   string
	url    string
	client *http.Client
	resend int
	typed  bool
	// sleepOnDelay makes the model wait out a stated Retry-After before giving up, as
	// an SDK that sleeps the delay verbatim does; it waits on the call's context only.
	sleepOnDelay bool
	// sleeping, when set, is sent to once the model starts waiting out a delay.
	sleeping chan struct{}
}

func (m *httpModel) Name() string { return m.name }

func (m *httpModel) GenerateContent(ctx context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		var first error
		for try := 0; try <= m.resend; try++ {
			hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url+"/v1beta/models/"+m.name+":generateContent", bytes.NewReader([]byte(`{}`)))
			if err != nil {
				yield(nil, err)
				return
			}
			resp, err := m.client.Do(hreq)
			if err != nil {
				if first == nil {
					first = err
				}
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if m.sleepOnDelay && resp.Header.Get("Retry-After") != "" {
				if m.sleeping != nil {
					m.sleeping <- struct{}{}
				}
				<-ctx.Done()
				yield(nil, ctx.Err())
				return
			}
			if resp.StatusCode == http.StatusOK {
				yield(&model.LLMResponse{Content: genai.NewContentFromText("custom answer", genai.RoleModel), FinishReason: genai.FinishReasonStop}, nil)
				return
			}
			if first == nil {
				if m.typed {
					first = &statusErr{code: resp.StatusCode, hdr: resp.Header.Clone()}
				} else {
					first = errors.New("custom provider: request failed")
				}
			}
		}
		yield(nil, first)
	}
}

// docs/model-failover.md, the providers table: "A failure is classified by its HTTP
// status, with or without the transport", with the "Also read" column: Retry-After-Ms and
// Retry-After from openai-go's *openai.Error, RetryInfo from genai.APIError, the
// HTTPStatusCode()/HTTPHeader() methods, and NewTransport on any model.LLM over net/http.
// Each primary answers 429 stating 40 s; its policy opens on the first failure with a 30 s
// cooldown, so the stated delay must show as a 40 s reopen and the cause as http_429.
func TestProvidersCoveredStatusAndDelay(t *testing.T) {
	type tc struct {
		name  string
		gem   bool
		ans   answer
		build func(t *testing.T, srv *apiServer) model.LLM
	}
	openaiNoTransport := func(t *testing.T, srv *apiServer) model.LLM {
		return openAIDefault(t, srv, http.DefaultTransport, option.WithMaxRetries(0))
	}
	cases := []tc{
		{"openai-go without transport/Retry-After-Ms", false, answer{Status: 429, Header: map[string]string{"Retry-After-Ms": "40000"}}, openaiNoTransport},
		{"openai-go without transport/Retry-After", false, answer{Status: 429, Header: map[string]string{"Retry-After": "40"}}, openaiNoTransport},
		{"genai without transport/RetryInfo", true, answer{Status: 429, RetryDelay: "40s"}, func(t *testing.T, srv *apiServer) model.LLM {
			return geminiModel(t, srv, gptModel, http.DefaultTransport, false)
		}},
		{"HTTPStatusError without transport/Retry-After-Ms", true, answer{Status: 429, Header: map[string]string{"Retry-After-Ms": "40000"}}, func(t *testing.T, srv *apiServer) model.LLM {
			return &httpModel{name: gptModel, url: srv.URL, client: &http.Client{}, typed: true}
		}},
		{"HTTPStatusError without transport/Retry-After", true, answer{Status: 429, Header: map[string]string{"Retry-After": "40"}}, func(t *testing.T, srv *apiServer) model.LLM {
			return &httpModel{name: gptModel, url: srv.URL, client: &http.Client{}, typed: true}
		}},
		{"own net/http model with NewTransport/Retry-After", true, answer{Status: 429, Header: map[string]string{"Retry-After": "40"}}, func(t *testing.T, srv *apiServer) model.LLM {
			return &httpModel{name: gptModel, url: srv.URL, client: &http.Client{Transport: modelfailover.NewTransport(nil)}}
		}},
		{"own net/http model with NewTransport/Retry-After-Ms", true, answer{Status: 429, Header: map[string]string{"Retry-After-Ms": "40000"}}, func(t *testing.T, srv *apiServer) model.LLM {
			return &httpModel{name: gptModel, url: srv.URL, client: &http.Client{Transport: modelfailover.NewTransport(nil)}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, true)
			var srv *apiServer
			if c.gem {
				srv = newGeminiServer(t)
			} else {
				srv = newOpenAIServer(t)
			}
			fb := newGeminiServer(t)
			srv.set(c.ans)
			fb.set(answer{Text: fallbackText})
			f := w.failover(t, modelfailover.Route{Model: gptModel, Region: region, LLM: c.build(t, srv)},
				modelfailover.Route{Model: flashModel, Region: region, LLM: geminiModel(t, fb, flashModel, modelfailover.NewTransport(nil), false)})
			h := harness(t, asModel(f))
			tr := turn(t, h)
			if got := tr.FinalText(); got != fallbackText {
				t.Fatalf("final text %q (error %q), want the fallback's: a 429 fails over", got, turnError(tr))
			}
			br := w.breaker(t, gptModel)
			if st := br.State(); st != breaker.Open {
				t.Fatalf("primary breaker %v, want open (a 429 counts)", st)
			}
			if ra := br.RetryAfter(); ra < 39*time.Second || ra > 41*time.Second {
				t.Errorf("primary reopens in %v, want the stated 40s", ra)
			}
			ev := w.announced()
			if len(ev) != 1 || ev[0].Cause != "http_429" {
				t.Errorf("announced %+v, want one failover with cause http_429", ev)
			}
			if md := lastMeta(tr); md == nil || md[modelfailover.MetaRoute] != flashModel+"@"+region || md[modelfailover.MetaFailover] != true {
				t.Errorf("response metadata %v, want %s=%s@%s and %s=true", md, modelfailover.MetaRoute, flashModel, region, modelfailover.MetaFailover)
			}
		})
	}
}

// docs/model-failover.md: "any other re-send within a failed attempt is refused in the
// process (it never reaches the API) and counted in Stats().RefusedRetries". The model is
// our own over net/http and re-sends a failed request twice at once.
func TestOwnClientResendRefused(t *testing.T) {
	for _, failure := range []answer{{Status: 503}, {Status: 429, Header: map[string]string{"Retry-After": "1"}}} {
		t.Run(fmt.Sprint(failure.Status), func(t *testing.T) {
			w := newWorld(t, false)
			srv, fb := newGeminiServer(t), newGeminiServer(t)
			srv.set(failure)
			fb.set(answer{Text: fallbackText})
			own := &httpModel{name: gptModel, url: srv.URL, client: &http.Client{Transport: modelfailover.NewTransport(nil)}, resend: 2}
			f := w.failover(t, modelfailover.Route{Model: gptModel, Region: region, LLM: own},
				modelfailover.Route{Model: flashModel, Region: region, LLM: geminiModel(t, fb, flashModel, modelfailover.NewTransport(nil), false)})
			h := harness(t, asModel(f))
			const turns = 3
			for i := range turns {
				tr := turn(t, h)
				if got := tr.FinalText(); got != fallbackText {
					t.Fatalf("turn %d: final text %q (error %q), want the fallback's", i, got, turnError(tr))
				}
			}
			attempts := turns
			if failure.Status == http.StatusTooManyRequests {
				attempts = 1 // the stated delay holds the route after the first answer (the call path's hold)
			}
			if got := srv.count(); got != attempts {
				t.Errorf("the primary received %d requests over %d turns, want one per admitted attempt (%d)", got, turns, attempts)
			}
			if got := f.Stats().RefusedRetries; got != uint64(2*attempts) {
				t.Errorf("Stats().RefusedRetries = %d, want %d (two re-sends refused per attempt)", got, 2*attempts)
			}
		})
	}
}
