package models

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"

	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// docs/model-failover.md: "genai's HTTPOptions.RetryOptions are pinned to one attempt on
// the request itself (which overrides the client's), on both paths". Here the retries
// are asked for on the request, through the agent's GenerateContentConfig, as well as
// on the client.
func TestGenaiRequestRetryOptionsPinned(t *testing.T) {
	for _, p := range allPaths {
		t.Run(string(p), func(t *testing.T) {
			w := newWorld(t, false)
			srv, fb := newGeminiServer(t), newGeminiServer(t)
			srv.set(answer{Status: 503})
			fb.set(answer{Text: fallbackText})
			attempts := int32(4)
			delay := 0.01
			gcc := &genai.GenerateContentConfig{HTTPOptions: &genai.HTTPOptions{RetryOptions: &genai.HTTPRetryOptions{Attempts: &attempts, InitialDelay: &delay, MaxDelay: &delay}}}
			fallback := modelfailover.Route{Model: flashModel, Region: region, LLM: geminiModel(t, fb, flashModel, modelfailover.NewTransport(nil), false)}
			var cfg llmagent.Config
			if p == modelPath {
				f := w.failover(t, modelfailover.Route{Model: "gemini-2.5-pro", Region: region, LLM: geminiModel(t, srv, "gemini-2.5-pro", modelfailover.NewTransport(nil), true)}, fallback)
				cfg = asModel(f)
			} else {
				f := w.failover(t, modelfailover.Route{Model: "gemini-2.5-pro", Region: region}, fallback)
				cfg = asCallbacks(f, geminiModel(t, srv, "gemini-2.5-pro", f.Transport(nil), true))
			}
			cfg.GenerateContentConfig = gcc
			h := harness(t, cfg)
			const turns = 4
			for i := range turns {
				tr := turn(t, h)
				if got := tr.FinalText(); got != fallbackText {
					t.Fatalf("turn %d: final text %q (error %q), want the fallback's", i, got, turnError(tr))
				}
				if got := srv.count(); got != i+1 {
					t.Fatalf("turn %d: the primary received %d requests, want one per admitted attempt", i, got)
				}
			}
		})
	}
}

func headerNames(h http.Header) []string {
	var out []string
	for k := range h {
		out = append(out, strings.ToLower(k))
	}
	sort.Strings(out)
	return out
}

// docs/model-failover.md: genai's clients get an attempt tag header once
// failover.Transport is built; a client that does not use it sends the tag once, and
// that request turns tagging off with one error record. The agent uses the callbacks,
// Failover.Transport was made (so the callbacks tag), but the agent's genai client was
// not given it. The request headers that reach the server after the first are compared
// with those of the same client used without any failover. (Found by this test: the
// page used to promise the tag never leaves the process.)
func TestAttemptTagLeavesTheProcessAtMostOnce(t *testing.T) {
	base := newGeminiServer(t)
	plain := geminiModel(t, base, "gemini-2.5-pro", http.DefaultTransport, false)
	req := &model.LLMRequest{Model: "gemini-2.5-pro", Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}}
	// Under a deadline, as every turn here runs, so genai adds x-server-timeout to both.
	ctx, cancel := context.WithTimeout(t.Context(), turnWall)
	defer cancel()
	for _, err := range plain.GenerateContent(ctx, req, false) {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := headerNames(base.requestHeaders()[0])

	w := newWorld(t, false)
	srv, fb := newGeminiServer(t), newGeminiServer(t)
	srv.set(answer{Text: "primary answer"})
	f := w.failover(t, modelfailover.Route{Model: "gemini-2.5-pro", Region: region},
		modelfailover.Route{Model: flashModel, Region: region, LLM: geminiModel(t, fb, flashModel, modelfailover.NewTransport(nil), false)})
	// The Failover's transport is made (for another client, say), so the callbacks tag
	// their attempts; the agent's own client bypasses it.
	_ = f.Transport(nil)
	h := harness(t, asCallbacks(f, geminiModel(t, srv, "gemini-2.5-pro", http.DefaultTransport, false)))
	for i := range 3 {
		tr := turn(t, h)
		if got := tr.FinalText(); got != "primary answer" {
			t.Fatalf("turn %d: final text %q (error %q)", i, got, turnError(tr))
		}
	}
	// docs/model-failover.md: "its first request carries the tag to the model's API, and
	// that request turns tagging off for good ... Every later request leaves untagged."
	reqs := srv.requestHeaders()
	if len(reqs) != 3 {
		t.Fatalf("the API saw %d requests, want 3", len(reqs))
	}
	for i, hd := range reqs[1:] {
		if got := headerNames(hd); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("request %d reached the API with headers %v, want the plain client's %v (an attempt tag left the process after tagging was turned off)", i+1, got, want)
		}
	}
	if recs := w.logs.errorRecords(); len(recs) == 0 {
		t.Errorf("no error record for a request that bypassed Failover.Transport")
	} else {
		t.Logf("error records: %q", recs)
	}
}
