package models

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"google.golang.org/adk/v2/model/openaimodel"

	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/modelfailover/openairoute"
)

type countingRT struct {
	n    atomic.Int64
	base http.RoundTripper
}

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}

// go doc modelfailover/openairoute: "openai-go's own retries are off
// (option.WithMaxRetries(0), put after the caller's options so it wins)"; Config.Client's
// "HTTPClient (nil means a new one over http.DefaultTransport) is copied, never changed,
// and the copy's transport is wrapped"; "var ErrNoModel ... returned by New when
// Config.Model is empty".
func TestOpenAIRouteConfig(t *testing.T) {
	if _, err := openairoute.New(t.Context(), openairoute.Config{}); !errors.Is(err, openairoute.ErrNoModel) {
		t.Errorf("New with no Model: %v, want ErrNoModel", err)
	}

	w := newWorld(t, false)
	srv, fb := newOpenAIServer(t), newGeminiServer(t)
	srv.set(answer{Status: 503})
	fb.set(answer{Text: fallbackText})
	rt := &countingRT{base: http.DefaultTransport}
	hc := &http.Client{Transport: rt}
	llm, err := openairoute.New(t.Context(), openairoute.Config{Model: gptModel, Client: openaimodel.ClientConfig{
		APIKey: "key", BaseURL: srv.URL + "/v1", HTTPClient: hc,
		Options: []option.RequestOption{option.WithMaxRetries(5)}, // the caller asks for retries
	}})
	if err != nil {
		t.Fatal(err)
	}
	if hc.Transport != rt {
		t.Errorf("the caller's HTTPClient was changed: its Transport is now %T", hc.Transport)
	}
	f := w.failover(t, modelfailover.Route{Model: gptModel, Region: region, LLM: llm},
		modelfailover.Route{Model: flashModel, Region: region, LLM: geminiModel(t, fb, flashModel, modelfailover.NewTransport(nil), false)})
	h := harness(t, asModel(f))
	const turns = 3
	for i := range turns {
		tr := turn(t, h)
		if got := tr.FinalText(); got != fallbackText {
			t.Fatalf("turn %d: final text %q (error %q)", i, got, turnError(tr))
		}
	}
	if got := srv.count(); got != turns {
		t.Errorf("the primary received %d requests over %d turns despite WithMaxRetries(5) from the caller, want one per attempt", got, turns)
	}
	if got := rt.n.Load(); got != turns {
		t.Errorf("the caller's transport carried %d requests, want %d (the copy wraps it)", got, turns)
	}
}
