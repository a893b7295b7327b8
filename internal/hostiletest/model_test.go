package hostiletest

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/syncbuf"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// TestHostileModelErrorsReachNobody sends the corpus as the model API's own error
// message (a 503 from the primary region of a real genai client, through the real
// runner): the failover answers from the other region, and no token may reach the
// user's answer, the model requests, the log, the pager hook or the metrics.
func TestHostileModelErrorsReachNobody(t *testing.T) {
	ctx := t.Context()
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pager := &recorder{}
	reg := prometheus.NewRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Logger: logger})
	// A model breaker that trips on the second failure, so the corpus causes a real
	// failover (announced: WARN record, pager hook) and not only per-call fallbacks.
	deps := dependencymap.MustNew(dependencymap.Config{ModelDefault: breaker.Policy{MinimumCalls: 2, FailureRateThreshold: 0.5}})

	primary := geminifake.Start(t, geminifake.Config{Name: "us-central1", Reply: geminifake.Reply{Text: "answer from us-central1"}})
	backup := geminifake.Start(t, geminifake.Config{Name: "europe-west1", Reply: geminifake.Reply{Text: "answer from europe-west1"}})
	llmA, err := gemini.NewModel(ctx, "gemini-2.5-pro", primary.ClientConfig(modelfailover.NewTransport))
	require.NoError(t, err)
	llmB, err := gemini.NewModel(ctx, "gemini-2.5-pro", backup.ClientConfig(modelfailover.NewTransport))
	require.NoError(t, err)
	obs := tel.ModelObserver()
	f := modelfailover.MustNew(modelfailover.Config{
		Routes: []modelfailover.Route{
			{Model: "gemini-2.5-pro", Region: "us-central1", LLM: llmA},
			{Model: "gemini-2.5-pro", Region: "europe-west1", LLM: llmB},
		},
		Breakers:   deps,
		Logger:     logger,
		OnFailover: func(e modelfailover.Event) { pager.add(e) },
		Observer:   obs,
	})
	obs.Watch(f)
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: f, Mode: llmagent.ModeChat})
	require.NoError(t, err)
	r, err := runner.New(runner.Config{AppName: "hostile", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
	require.NoError(t, err)

	var answers strings.Builder
	for n, c := range corpus {
		require.NoError(t, primary.Fail(geminifake.Failure{Code: http.StatusServiceUnavailable, Message: strings.ToValidUTF8(c.Body, "?")}))
		for ev, err := range r.Run(ctx, "user", "s"+c.Name, genai.NewContentFromText("hello?", genai.RoleUser), agent.RunConfig{}) {
			require.NoError(t, err, "case %d", n)
			if ev.Content != nil {
				for _, p := range ev.Content.Parts {
					answers.WriteString(p.Text)
				}
			}
			answers.WriteString(" ")
		}
	}
	require.Contains(t, answers.String(), "answer from europe-west1")

	t.Run("answers", func(t *testing.T) { requireNoLeak(t, "an answer", answers.String()) })
	t.Run("model requests", func(t *testing.T) {
		var all strings.Builder
		for _, req := range backup.Log() {
			all.Write(req.Body)
		}
		requireNoLeak(t, "a request to the backup route", all.String())
	})
	rest, attempts := splitLog(t, logs.String(), "model failover: attempt failed")
	t.Run("attempt records", func(t *testing.T) {
		require.Contains(t, attempts, `"error":{"len":`)
		requireNoLeak(t, "an attempt record", attempts)
	})
	t.Run("failover records", func(t *testing.T) {
		requireNoLeak(t, "a failover record", rest)
	})
	t.Run("pager hook", func(t *testing.T) {
		requireNoLeak(t, "an OnFailover event", pager.String())
	})
	t.Run("metrics exposition", func(t *testing.T) {
		rec := httptest.NewRecorder()
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(rec,
			httptest.NewRequest(http.MethodGet, "/metrics", nil))
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		require.Contains(t, rec.Body.String(), "agentbreaker_model_failovers_total")
		requireNoLeak(t, "/metrics", rec.Body.String())
	})
}
