package soak

// One replica of the agent: its own clock, dependency map, fleet membership, journal
// handle, plugin, tools and model failover, and two runners (a chat agent and a
// workflow), exactly as an application would wire them from the public API.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"
	"google.golang.org/adk/v2/agent/workflowagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/model/openaimodel"
	adkplugin "google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/mcptoolset"
	"google.golang.org/adk/v2/workflow"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/a2aguard"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/fleet"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/postgres"
	"github.com/agentbreaker/agentbreaker/mcpguard"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/modelfailover/openairoute"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/workflowguard"
)

const (
	primaryModel  = "gemini-2.5-pro"
	fallbackModel = "gpt-4.1"
	modelRegion   = "local"
	syncInterval  = 200 * time.Millisecond
	opTimeout     = 100 * time.Millisecond
)

// stepClock is the system clock plus an offset the fault schedule steps forward and
// back: every replica's breakers, plugin, failover, retrier and journal read it.
type stepClock struct{ off atomic.Int64 }

func (c *stepClock) Now() time.Time        { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *stepClock) Step(d time.Duration)  { c.off.Add(int64(d)) }
func (c *stepClock) Offset() time.Duration { return time.Duration(c.off.Load()) }

// toolPolicy trips quickly and probes soon, so that a short soak sees many cycles.
var toolPolicy = breaker.Policy{FailureRateThreshold: 0.5, MinimumCalls: 6, Window: 10 * time.Second,
	Cooldown: 2 * time.Second, CooldownMultiplier: 1.5, MaxCooldown: 8 * time.Second, MaxRetryAfter: 5 * time.Second,
	SlowCallThreshold: time.Second, ProbeLease: 5 * time.Second}

var modelPolicy = breaker.Policy{FailureRateThreshold: 0.5, MinimumCalls: 4, Window: 10 * time.Second,
	Cooldown: 2 * time.Second, MaxRetryAfter: 5 * time.Second, ProbeLease: 5 * time.Second}

type replica struct {
	id     int
	clk    *stepClock
	deps   *dependencymap.Map
	fl     *fleet.Fleet
	j      *journal.Journal
	cb     *callbacks.Callbacks
	mcp    *mcpguard.Toolset
	chat   *breakertest.Harness
	flow   *breakertest.Harness
	timing *timing
}

// replicaEnv is what every replica shares.
type replicaEnv struct {
	addrs     worldAddrs
	redisAddr string
	pgDSN     string
	prefix    string
	app       string
	hashKey   []byte
	obs       *observer
}

func newReplica(ctx context.Context, env *replicaEnv, id int) (*replica, error) {
	r := &replica{id: id, clk: &stepClock{}}
	r.deps = dependencymap.MustNew(dependencymap.Config{
		Clock:        r.clk,
		Default:      toolPolicy,
		ModelDefault: modelPolicy,
		Dependencies: map[string]dependencymap.Dependency{
			depOrders: {Tools: []string{"lookup_order", "place_order"}},
			depStock:  {Tools: []string{"check_stock"}},
			depLedger: {Tools: []string{"get_balance", "transfer"}},
			// Declared, so that the breaker exists (and joins the fleet) before the first
			// call: one made on demand admits calls until the next sync, whatever the
			// fleet knows (TestJoiningReplicaRespectsAnOpenFleetBreaker).
			depBilling: {},
		},
		OnStateChange: []func(breaker.Event){func(e breaker.Event) { env.obs.transition(id, e, r.clk) }},
	})
	var err error
	r.fl, err = fleet.New(fleet.Config{Addr: env.redisAddr, App: env.app, Replica: fmt.Sprintf("r%d", id),
		SyncInterval: syncInterval, OpTimeout: opTimeout, Logger: env.obs.quietLogger()})
	if err != nil {
		return nil, err
	}
	if err := r.fl.AttachMap(r.deps); err != nil {
		return nil, err
	}
	r.j, err = journal.Open(ctx, journal.Config{Backend: postgres.Backend{DSN: env.pgDSN}, Prefix: env.prefix,
		HashKey: env.hashKey, Clock: r.clk, WriteTimeout: 3 * time.Second})
	if err != nil {
		r.fl.Close()
		return nil, err
	}
	rt := retry.MustNew(retry.Config{Journal: r.j.ForRetry(), Clock: r.clk})
	r.cb = callbacks.MustNew(callbacks.Config{
		Dependencies: r.deps,
		Clock:        r.clk,
		SideEffects: callbacks.SideEffects{
			MutatingTools: []string{"place_order", "transfer"},
			Retry:         rt,
			Journal:       r.j,
		},
		Observability: callbacks.Observability{OnEvent: func(e callbacks.Event) { env.obs.event(id, e) }},
	})
	client := &http.Client{Timeout: 4 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	lookup := httpTool("lookup_order", "Looks an order up.", client, http.MethodGet, env.addrs.Orders+"/lookup")
	// The mutating tool's client sends the operation's key through httptransport, as
	// docs/side-effects.md shows, over reused connections: net/http no longer resends a
	// keyed request whose answer was lost (httptransport's
	// TestMutationIsNotResentByNetHTTP, a bug the soak found).
	mutating := &http.Client{Timeout: 4 * time.Second, Transport: httptransport.MustNew(httptransport.Config{
		Base: &http.Transport{MaxIdleConnsPerHost: 16}})}
	place := r.cb.MustWithIdempotencyKey(httpTool("place_order", "Places an order.", mutating, http.MethodPost, env.addrs.Orders+"/orders"))
	stock := httpTool("check_stock", "Checks the stock of an item.", client, http.MethodGet, env.addrs.Stock+"/stock")

	r.mcp, err = mcpguard.New(mcpguard.Config{Dependency: depLedger, Callbacks: r.cb, Timeout: 4 * time.Second,
		Toolset: mcptoolset.Config{Endpoint: env.addrs.Ledger}})
	if err != nil {
		return nil, err
	}
	card := &a2a.AgentCard{Name: "billing_agent", Capabilities: a2a.AgentCapabilities{Streaming: true},
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(env.addrs.Billing, a2a.TransportProtocolJSONRPC)}}
	remote, err := a2aguard.New(a2aguard.Config{Dependency: depBilling, Callbacks: r.cb, Timeout: 4 * time.Second,
		Agent: remoteagent.A2AConfig{Name: "billing_agent", Description: "Answers billing questions.", AgentCard: card}})
	if err != nil {
		return nil, err
	}

	fo, err := r.failover(ctx, env)
	if err != nil {
		return nil, err
	}
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Mode: llmagent.ModeChat,
		Model:    &planner{failover: fo, obs: env.obs},
		Tools:    []tool.Tool{lookup, place, r.cb.AgentTool(remote, nil)},
		Toolsets: []tool.Toolset{r.mcp}})
	if err != nil {
		return nil, err
	}
	r.timing = newTiming()
	plugins := []*adkplugin.Plugin{r.timing.wrap(r.cb.Plugin())}
	r.chat = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: root, Plugins: plugins, AppName: "soak"})

	node, err := workflowguard.New(workflowguard.Config{Callbacks: r.cb, Tool: stock, Timeout: 4 * time.Second})
	if err != nil {
		return nil, err
	}
	prep := workflow.NewFunctionNode("prep", func(agent.Context, any) (map[string]any, error) {
		return map[string]any{"query": "widget"}, nil
	}, workflow.NodeConfig{})
	report := workflow.NewFunctionNode("report", func(_ agent.Context, in any) (map[string]any, error) {
		return map[string]any{"report": in}, nil
	}, workflow.NodeConfig{})
	cached := workflow.NewFunctionNode("from_cache", func(agent.Context, any) (map[string]any, error) {
		return map[string]any{"in_stock": "unknown (cached)"}, nil
	}, workflow.NodeConfig{})
	edges := workflow.Chain(workflow.Start, prep, node)
	edges = append(edges, workflow.Edge{From: node, To: cached, Route: workflowguard.Refused},
		workflow.Edge{From: node, To: report, Route: workflow.Default})
	wf, err := workflowagent.New(workflowagent.Config{Name: "stock_pipeline", Edges: edges})
	if err != nil {
		return nil, err
	}
	r.flow = breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: wf, Plugins: []*adkplugin.Plugin{r.cb.Plugin()}, AppName: "soakflow"})
	return r, nil
}

func (r *replica) failover(ctx context.Context, env *replicaEnv) (*modelfailover.Failover, error) {
	primary, err := gemini.NewModel(ctx, primaryModel, &genai.ClientConfig{APIKey: "key", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: env.addrs.Gemini},
		HTTPClient:  &http.Client{Transport: modelfailover.NewTransport(nil)}})
	if err != nil {
		return nil, err
	}
	fallback, err := openairoute.New(ctx, openairoute.Config{Model: fallbackModel,
		Client: openaimodel.ClientConfig{APIKey: "key", BaseURL: env.addrs.OpenAI}})
	if err != nil {
		return nil, err
	}
	return modelfailover.New(modelfailover.Config{
		Breakers: r.deps, Clock: r.clk, Logger: env.obs.quietLogger(), AttemptTimeout: 4 * time.Second,
		Routes: []modelfailover.Route{
			{Model: primaryModel, Region: modelRegion, LLM: primary},
			{Model: fallbackModel, Region: modelRegion, LLM: fallback},
		},
		OnFailover: func(modelfailover.Event) { env.obs.failovers.Add(1) },
	})
}

func (r *replica) close() {
	_ = r.mcp.Close()
	r.fl.Close()
	_ = r.j.Close()
}

// markedErrors counts the tool errors that carried a dependency's marked text.
var markedErrors atomic.Int64

// httpTool is a tool written the way many are: it calls its service and, on an error
// status, returns an error that carries the service's own text (with the status, typed,
// so the breaker can count it). The plugin must keep that text from the model.
func httpTool(name, desc string, client *http.Client, method, url string) tool.Tool {
	type args struct {
		Query string `json:"query,omitempty"`
		Op    string `json:"op,omitempty"`
	}
	t, err := functiontool.New(functiontool.Config{Name: name, Description: desc},
		func(ctx agent.Context, in args) (map[string]any, error) {
			var req *http.Request
			var err error
			if method == http.MethodGet {
				req, err = http.NewRequestWithContext(ctx, method, url+"?q="+in.Query, nil)
			} else {
				body, _ := json.Marshal(map[string]string{"Op": in.Op})
				req, err = http.NewRequestWithContext(ctx, method, url, strings.NewReader(string(body)))
			}
			if err != nil {
				return nil, err
			}
			resp, err := client.Do(req)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode >= 400 {
				if strings.Contains(string(b), leakMarker) {
					markedErrors.Add(1) // a control: the leak check has something to find
				}
				ra, _ := classify.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
				return nil, fmt.Errorf("%s: service said %q: %w", name, b, classify.StatusError(resp.StatusCode, ra, string(b)))
			}
			var out map[string]any
			if err := json.Unmarshal(b, &out); err != nil {
				return nil, fmt.Errorf("%s: bad answer %q", name, b)
			}
			return out, nil
		})
	if err != nil {
		panic(err)
	}
	return t
}

// timing wraps a plugin's callbacks and records when each ran, per invocation: the
// plugin's share of a turn is the union of those spans (callbacks of parallel calls
// overlap), over the turn's wall time.
type timing struct {
	mu  sync.Mutex
	per map[string][][2]time.Time
}

func newTiming() *timing { return &timing{per: map[string][][2]time.Time{}} }

func (t *timing) span(inv string, start time.Time) {
	end := time.Now()
	t.mu.Lock()
	t.per[inv] = append(t.per[inv], [2]time.Time{start, end})
	t.mu.Unlock()
}

// take returns and forgets the invocation's time in the plugin.
func (t *timing) take(inv string) time.Duration {
	t.mu.Lock()
	spans := t.per[inv]
	delete(t.per, inv)
	t.mu.Unlock()
	sort.Slice(spans, func(i, j int) bool { return spans[i][0].Before(spans[j][0]) })
	var total time.Duration
	var cur [2]time.Time
	for i, s := range spans {
		if i == 0 || s[0].After(cur[1]) {
			total += cur[1].Sub(cur[0])
			cur = s
			continue
		}
		if s[1].After(cur[1]) {
			cur[1] = s[1]
		}
	}
	return total + cur[1].Sub(cur[0])
}

func (t *timing) wrap(p *adkplugin.Plugin) *adkplugin.Plugin {
	cfg := adkplugin.Config{Name: p.Name()}
	if f := p.BeforeRunCallback(); f != nil {
		cfg.BeforeRunCallback = func(ic agent.InvocationContext) (*genai.Content, error) {
			s := time.Now()
			defer t.span(ic.InvocationID(), s)
			return f(ic)
		}
	}
	if f := p.AfterRunCallback(); f != nil {
		cfg.AfterRunCallback = func(ic agent.InvocationContext) {
			s := time.Now()
			defer t.span(ic.InvocationID(), s)
			f(ic)
		}
	}
	cfg.OnUserMessageCallback = p.OnUserMessageCallback()
	cfg.OnEventCallback = p.OnEventCallback()
	cfg.BeforeAgentCallback = p.BeforeAgentCallback()
	cfg.AfterAgentCallback = p.AfterAgentCallback()
	if f := p.BeforeModelCallback(); f != nil {
		cfg.BeforeModelCallback = func(ctx agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
			s := time.Now()
			defer t.span(ctx.InvocationID(), s)
			return f(ctx, req)
		}
	}
	if f := p.AfterModelCallback(); f != nil {
		cfg.AfterModelCallback = func(ctx agent.Context, resp *model.LLMResponse, err error) (*model.LLMResponse, error) {
			s := time.Now()
			defer t.span(ctx.InvocationID(), s)
			return f(ctx, resp, err)
		}
	}
	if f := p.OnModelErrorCallback(); f != nil {
		cfg.OnModelErrorCallback = func(ctx agent.Context, req *model.LLMRequest, err error) (*model.LLMResponse, error) {
			s := time.Now()
			defer t.span(ctx.InvocationID(), s)
			return f(ctx, req, err)
		}
	}
	if f := p.BeforeToolCallback(); f != nil {
		cfg.BeforeToolCallback = func(ctx agent.Context, tl tool.Tool, args map[string]any) (map[string]any, error) {
			s := time.Now()
			defer t.span(ctx.InvocationID(), s)
			return f(ctx, tl, args)
		}
	}
	if f := p.AfterToolCallback(); f != nil {
		cfg.AfterToolCallback = func(ctx agent.Context, tl tool.Tool, args, res map[string]any, err error) (map[string]any, error) {
			s := time.Now()
			defer t.span(ctx.InvocationID(), s)
			return f(ctx, tl, args, res, err)
		}
	}
	if f := p.OnToolErrorCallback(); f != nil {
		cfg.OnToolErrorCallback = func(ctx agent.Context, tl tool.Tool, args map[string]any, err error) (map[string]any, error) {
			s := time.Now()
			defer t.span(ctx.InvocationID(), s)
			return f(ctx, tl, args, err)
		}
	}
	out, err := adkplugin.New(cfg)
	if err != nil {
		panic(err)
	}
	return out
}
