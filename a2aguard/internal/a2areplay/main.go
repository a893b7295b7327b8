// Command a2areplay replays issue 33's Found 1 through adk-go's real runner: a root
// agent reaches a remote agent over A2A (a real adka2a server on a local socket, or
// an address nobody listens on) by transfer or as an AgentTool, 50 turns per row, with
// the agentbreaker plugin and a fake clock, with and without a2aguard. It prints what
// reached the remote, how many turns were answered, how many let the transport's
// text through, and what the ten turns after the cooldown sent. docs/a2a.md shows its
// output.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/agenttool"

	"github.com/agentbreaker/agentbreaker/a2aguard"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

const (
	turns   = 50
	name    = "billing-agent"
	turnTTL = 150 * time.Millisecond
)

var transportWords = []string{"failed to send HTTP request", "unexpected HTTP status", "connection refused",
	"127.0.0.1", "deadline exceeded", "context canceled", "Post \""}

func main() {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "remote\thop\tguard\treached\tanswered\ttransport text\tafter cooldown")
	for _, failure := range []string{"down", "503", "hang"} {
		for _, hop := range []string{"transfer", "agenttool"} {
			for _, guarded := range []bool{false, true} {
				row, err := replay(failure, hop, guarded)
				if err != nil {
					fmt.Fprintln(os.Stderr, "a2areplay:", err)
					os.Exit(1)
				}
				g := "plugin only"
				if guarded {
					g = "a2aguard"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d of %d\t%d\t%d\t%d sent in 10 turns\n",
					failure, hop, g, row.reached, turns, row.answered, row.leaked, row.afterCooldown)
			}
		}
	}
	w.Flush()
}

type row struct {
	reached, afterCooldown int64
	answered, leaked       int
}

// replay runs one row: turns turns against a remote that fails as failure says,
// reached by hop, with or without a2aguard, then ten turns past every cooldown.
func replay(failure, hop string, guarded bool) (row, error) {
	var counter atomic.Int64
	url, hc, stop, err := billingRemote(failure, &counter)
	if err != nil {
		return row{}, err
	}
	defer stop()
	card := &a2a.AgentCard{SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
		Capabilities: a2a.AgentCapabilities{Streaming: true}}
	fake := clock.NewFake(time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC))
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fake})
	cb := callbacks.MustNew(callbacks.Config{Dependencies: deps, Clock: fake})
	remote, err := remoteAgent(card, hc, cb, guarded)
	if err != nil {
		return row{}, err
	}
	root, err := rootAgent(hop, remote)
	if err != nil {
		return row{}, err
	}
	h, err := breakertest.NewHarness(breakertest.HarnessConfig{Agent: root, Plugins: []*plugin.Plugin{cb.Plugin()}})
	if err != nil {
		return row{}, err
	}
	sid, err := h.NewSession(context.Background())
	if err != nil {
		return row{}, err
	}
	var r row
	for range turns {
		answered, leaked := turn(h, sid)
		if answered {
			r.answered++
		}
		if leaked {
			r.leaked++
		}
	}
	r.reached = counter.Load()
	// Past every cooldown the breakers could have set (jittered, doubled): the probe.
	fake.Advance(10 * time.Minute)
	for range 10 {
		turn(h, sid)
	}
	r.afterCooldown = counter.Load() - r.reached
	return r, nil
}

// billingRemote returns the remote's address, failing as failure says ("down": nobody
// listens; "hang": it never answers; else 503), the HTTP client to reach it, and the
// function that stops it. counter counts what reached it (for "down", the dials).
func billingRemote(failure string, counter *atomic.Int64) (string, *http.Client, func(), error) {
	hc := &http.Client{}
	if failure == "down" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", nil, nil, err
		}
		url := "http://" + l.Addr().String()
		l.Close()
		var dialer net.Dialer
		hc.Transport = &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
			counter.Add(1) // nothing reaches a server that is down: count the attempts
			return dialer.DialContext(ctx, n, a)
		}}
		return url, hc, func() {}, nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counter.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		if failure == "hang" {
			<-r.Context().Done()
			return
		}
		http.Error(w, "upstream billing database is down", http.StatusServiceUnavailable)
	}))
	return srv.URL, hc, srv.Close, nil
}

// remoteAgent returns the billing agent behind card, reached with hc: through
// a2aguard when guarded, else adk-go's remote agent under the plugin only.
func remoteAgent(card *a2a.AgentCard, hc *http.Client, cb *callbacks.Callbacks, guarded bool) (agent.Agent, error) {
	acfg := remoteagent.A2AConfig{Name: name, Description: "Answers billing questions.", AgentCard: card}
	if guarded {
		// Half of a short turn is left for the root to answer, so the figures hold on
		// a loaded machine; the default is a tenth.
		return a2aguard.New(a2aguard.Config{Dependency: "billing", Callbacks: cb, HTTPClient: hc, TurnReserve: 0.5, Agent: acfg})
	}
	acfg.ClientProvider = remoteagent.NewA2AClientProvider(a2aclient.NewFactory(a2aclient.WithJSONRPCTransport(hc)))
	return remoteagent.NewA2A(acfg)
}

// rootAgent returns the root agent, whose scripted model reaches remote by hop: by
// transfer, or ("agenttool") as an AgentTool whose answer it repeats.
func rootAgent(hop string, remote agent.Agent) (agent.Agent, error) {
	if hop == "transfer" {
		m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(breakertest.Request) breakertest.Step {
			return breakertest.Call("transfer_to_agent", map[string]any{"agent_name": name})
		}})
		return llmagent.New(llmagent.Config{Name: "root", Model: m, SubAgents: []agent.Agent{remote}})
	}
	m := breakertest.MustNewModel(breakertest.ModelConfig{Then: func(req breakertest.Request) breakertest.Step {
		if last := req.Contents[len(req.Contents)-1]; len(last.Parts) > 0 && last.Parts[0].FunctionResponse != nil {
			b, _ := json.Marshal(last.Parts[0].FunctionResponse.Response)
			return breakertest.Text("root: " + string(b))
		}
		return breakertest.Call(name, map[string]any{"request": "Is invoice 42 paid?"})
	}})
	return llmagent.New(llmagent.Config{Name: "root", Model: m, Tools: []tool.Tool{agenttool.New(remote, nil)}})
}

// turn runs one turn under the whole-turn deadline and reports whether the user got an
// answer (a final text, no error event, no run error) and whether any event carried
// the transport's text.
func turn(h *breakertest.Harness, sid string) (answered, leaked bool) {
	ctx, cancel := context.WithTimeout(context.Background(), turnTTL)
	defer cancel()
	t, err := h.Run(ctx, sid, "Is invoice 42 paid?")
	answered = err == nil && t.FinalText() != ""
	for _, ev := range t.Events {
		b, _ := json.Marshal(struct {
			C any
			E string
		}{ev.Content, ev.ErrorMessage})
		for _, w := range transportWords {
			if strings.Contains(string(b), w) {
				leaked = true
			}
		}
		if ev.ErrorMessage != "" {
			answered = false
		}
	}
	return answered, leaked
}
