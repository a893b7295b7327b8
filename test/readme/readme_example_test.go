package readme_test

// The Go blocks of README.md, compiled. TestReadmeGoBlocksAreCompiled fails when a
// block in the README is not found, line for line, in a function of a test file;
// most of them are here. Edit them here first, then copy them into the README.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/redact"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry"
	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// The README's snippets as functions: compiled, and listed here so that nothing
// reports them unused.
var _ = []any{lookupCustomer, modelFailover, journalAndRetry, pluginWithJournal, metrics, adminEndpoint, excerpts}

// rootAgent is an agent with the two CRM tools the README talks about.
func newRootAgent() agent.Agent {
	var tools []tool.Tool
	for _, name := range []string{"lookup_customer", "update_customer"} {
		tools = append(tools, must(breakertest.NewHTTPTool(breakertest.HTTPToolConfig{Name: name, Description: "CRM", URL: "http://127.0.0.1:1/" + name})))
	}
	model := breakertest.MustNewModel(breakertest.ModelConfig{Name: "scripted",
		Then: func(breakertest.Request) breakertest.Step { return breakertest.Text("ok") }})
	return must(llmagent.New(llmagent.Config{Name: "support", Model: model, Tools: tools}))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func Example_quickStart() {
	rootAgent := newRootAgent()

	// One breaker per dependency: both CRM tools trip together.
	deps := dependencymap.MustNew(dependencymap.Config{
		PolicyVersion: "2026-11-30",
		Dependencies: map[string]dependencymap.Dependency{
			"crm": {Tools: []string{"lookup_customer", "update_customer"}},
		},
	})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps})

	r, err := runner.New(runner.Config{
		AppName:        "support",
		Agent:          rootAgent,
		SessionService: session.InMemoryService(),
		// agentbreaker first: see "Registering" below.
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{guard.Plugin()}},
	})

	fmt.Println(r != nil, err)
	// Output: true <nil>
}

// crmClient stands for a user's own client of the CRM.
type crmClient struct{ base string }

func (c crmClient) Lookup(ctx context.Context, id string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/customers/"+id, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		// A typed error: a 404 is then healthy for the breaker and a 503 counts.
		return "", classify.StatusError(resp.StatusCode, 0, "")
	}
	return string(body), err
}

// lookupCustomer is direct use of a breaker, without adk-go.
func lookupCustomer(ctx context.Context, deps *dependencymap.Map, crm crmClient, id string) (map[string]any, error) {
	b, _ := deps.ForTool("lookup_customer") // lock-free; nil for an exempt tool, which Execute runs unguarded
	var customer string
	err := classify.Execute(ctx, b, func(ctx context.Context) error {
		var err error
		customer, err = crm.Lookup(ctx, id) // its error is classified: timeouts and 5xx count, 404 does not
		return err
	})
	if errors.Is(err, breaker.ErrOpen) { // not sent: answer with what the model can reason about
		return payloads.Unavailable(payloads.Info{Dependency: b.Name(), RetryAfter: b.RetryAfter()}), nil
	}
	return map[string]any{"customer": customer}, err
}

func modelFailover(proUS, proEU model.LLM, pager interface{ Notify(modelfailover.Event) }) (agent.Agent, error) {
	deps := dependencymap.MustNew(dependencymap.Config{PolicyVersion: "prod-1"})
	failover := modelfailover.MustNew(modelfailover.Config{
		Routes: []modelfailover.Route{
			{Model: "gemini-2.5-pro", Region: "us-central1", LLM: proUS},  // primary
			{Model: "gemini-2.5-pro", Region: "europe-west1", LLM: proEU}, // same model, other region
			{Model: "gemini-2.5-flash", Region: "us-central1"},            // primary's client, weaker model
		},
		Breakers:   deps,
		OnFailover: func(e modelfailover.Event) { pager.Notify(e) },
	})
	agent, err := llmagent.New(llmagent.Config{Name: "assistant", Model: failover})

	return agent, err
}

func journalAndRetry(ctx context.Context, deps *dependencymap.Map, paymentsStatus journal.StatusLookup, req *http.Request, args map[string]any) error {
	j, err := journal.Open(ctx, journal.Config{
		Backend: sqlite.Backend{Path: "/var/lib/agent/intents.db"},           // or postgres.Backend{DSN: ...}
		Lookups: map[string]journal.StatusLookup{"payments": paymentsStatus}, // was it applied?
	})
	if err != nil {
		return err
	}
	report, err := j.Reconcile(ctx) // at start-up: settle what a crash left open
	r := retry.MustNew(retry.Config{Journal: j.ForRetry()})
	client := &http.Client{Transport: httptransport.MustNew(httptransport.Config{Map: deps})}

	res := r.Do(ctx, retry.Operation{Dependency: "payments", Tool: "charge_card", Args: args,
		Idempotent: false, Reconcile: j.Reconciler()},
		func(ctx context.Context, info retry.Info) (classify.Classification, error) {
			resp, err := client.Do(req.WithContext(ctx)) // sends Idempotency-Key: info.IdempotencyKey
			return httptransport.Classify(ctx, resp, err), err
		})
	// res.Outcome is SUCCEEDED, FAILED_BEFORE_SEND, FAILED or UNKNOWN; res.Reason says why it stopped.

	_, _ = report, res
	return err
}

func pluginWithJournal(deps *dependencymap.Map, r *retry.Retrier, j *journal.Journal, chargeTool tool.Tool) {
	guard := callbacks.MustNew(callbacks.Config{
		Dependencies: deps,
		SideEffects: callbacks.SideEffects{
			MutatingTools: []string{"charge_card"}, // side effects: UNKNOWN is never replayed
			Journal:       j,                       // intents first; UNKNOWN settled through its status lookups
		},
	})
	charge := guard.MustWithIdempotencyKey(chargeTool) // its HTTP client sends the operation's key

	_ = charge
}

func metrics(j *journal.Journal, routes []modelfailover.Route, lookup tool.Tool) {
	reg := prometheus.NewRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Logger: slog.Default()})
	deps := dependencymap.MustNew(dependencymap.Config{
		// ... dependencies and policies ...
	})
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Observability: callbacks.Observability{Observer: tel}})
	tools := []tool.Tool{tooltimeout.MustWrap(lookup, tooltimeout.Config{Timeout: 10 * time.Second})}
	failover := modelfailover.MustNew(modelfailover.Config{Breakers: deps, Routes: routes})
	r := retry.MustNew(retry.Config{Journal: j.ForRetry()})
	tel.Wire(telemetry.Parts{Dependencies: deps, Failover: failover, Journal: j, Retrier: r, Tools: tools}) // the one call
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	_, _ = guard, r
}

func adminEndpoint(deps *dependencymap.Map, guard *callbacks.Callbacks, failover *modelfailover.Failover, j *journal.Journal, certFile, keyFile string) error {
	h, err := admin.New(admin.Config{
		Token:     os.Getenv("AGENTBREAKER_ADMIN_TOKEN"),  // required, 16+ bytes, no default
		Breakers:  deps,                                   // a map: the page shows each breaker's last transitions
		Bulkheads: admin.BulkheadGroup(guard.Bulkheads()), // optional
		Routes:    admin.FailoverRoutes(failover),         // optional
		Journal:   admin.JournalOf(j),                     // optional
		Logger:    slog.Default(),
	})
	if err != nil {
		return err
	}
	internal := http.NewServeMux()
	internal.Handle("/ops/breakers/", http.StripPrefix("/ops/breakers", h))
	go http.ListenAndServeTLS("10.0.0.5:9443", certFile, keyFile, internal)

	return nil
}

func excerpts(deps *dependencymap.Map) {
	red := redact.MustNew(redact.Config{Excerpt: true, ExcerptLen: 256}) // opt-in
	guard := callbacks.MustNew(callbacks.Config{Dependencies: deps, Guidance: callbacks.Guidance{Redaction: callbacks.Redaction{Redactor: red}}})
	r := retry.MustNew(retry.Config{Redactor: red /* , Journal, … */})

	_, _ = guard, r
}
