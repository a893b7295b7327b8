package modelfailover_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"

	"github.com/agentbreaker/agentbreaker/modelfailover"
)

const attemptHeader = "X-Agentbreaker-Attempt"

// Regression for issue 11: once any NewTransport existed in the process, the
// callbacks tagged every request of the agent's own model with the attempt header,
// and a model whose HTTP client lacked the transport sent it to the model's API.
func TestAttemptTagNeverLeavesTheProcess(t *testing.T) {
	_ = modelfailover.NewTransport(nil) // a transport elsewhere in the process (routes, other agents)
	tests := []struct {
		name string
		wrap func(*modelfailover.Failover) func(rtWrap http.RoundTripper) http.RoundTripper
	}{
		{"client without the transport", func(*modelfailover.Failover) func(http.RoundTripper) http.RoundTripper { return nil }},
		{"client with NewTransport", func(*modelfailover.Failover) func(http.RoundTripper) http.RoundTripper {
			return modelfailover.NewTransport
		}},
		{"client with Failover.Transport", func(f *modelfailover.Failover) func(http.RoundTripper) http.RoundTripper { return f.Transport }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := twoRegions(t)
			h := newHarness(t, harnessConfig{regions: []*region{a, b},
				routes: []modelfailover.Route{{Model: pro, Region: a.name}, b.route()},
				agentModelFor: func(f *modelfailover.Failover) model.LLM {
					llm, err := gemini.NewModel(t.Context(), pro, a.server.ClientConfig(tt.wrap(f)))
					require.NoError(t, err)
					return llm
				}})
			for range 3 {
				res := h.turn(t.Context(), newSession(), false)
				require.NoError(t, res.err)
				require.Equal(t, []string{"answer from us-central1"}, res.finals)
			}
			log := a.server.Log()
			require.Len(t, log, 3)
			for _, req := range log {
				require.Empty(t, req.Header.Values(attemptHeader), "the attempt tag reached the model's API")
			}
		})
	}
}

// A Failover told that its agent's model uses its Transport, whose requests then go
// through another client anyway, stops tagging after the first request and says so.
func TestAttemptTagStopsWhenTheTransportIsBypassed(t *testing.T) {
	a, b := twoRegions(t)
	other := a.server
	h := newHarness(t, harnessConfig{regions: []*region{a, b},
		routes: []modelfailover.Route{{Model: pro, Region: a.name}, b.route()},
		agentModelFor: func(f *modelfailover.Failover) model.LLM {
			_ = f.Transport(nil) // declared, but not used by the client below
			llm, err := gemini.NewModel(t.Context(), pro, other.ClientConfig(nil))
			require.NoError(t, err)
			return llm
		}})
	for range 3 {
		require.NoError(t, h.turn(t.Context(), newSession(), false).err)
	}
	tagged := 0
	for _, req := range a.server.Log() {
		tagged += len(req.Header.Values(attemptHeader))
	}
	require.Equal(t, 1, tagged, "only the first request, before the bypass was seen, carried the tag")
	errs := h.logs.records(t, "ERROR")
	require.Len(t, errs, 1)
	require.Contains(t, errs[0]["msg"], "left without passing through Failover.Transport")
}
