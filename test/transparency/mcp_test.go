package transparency_test

import (
	"context"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/mcpguard"
)

type searchOut struct {
	Customer string `json:"customer"`
	Tier     string `json:"tier"`
}

// mcpTools: the root calls crm_search from an MCP server over streamable HTTP.
// Guarded with mcpguard.New (docs/mcp.md, "Wiring"). The server logs each call with
// the CRM's requests, and its HTTP requests are counted.
func mcpTools(w *world) agent.Agent {
	server := mcp.NewServer(&mcp.Implementation{Name: "crm-mcp", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "crm_search", Description: "Searches the CRM."},
		func(_ context.Context, _ *mcp.CallToolRequest, in queryArgs) (*mcp.CallToolResult, searchOut, error) {
			w.dep.mu.Lock()
			w.dep.log = append(w.dep.log, "MCP crm_search "+in.Query)
			w.dep.mu.Unlock()
			return nil, searchOut{Customer: in.Query, Tier: "gold"}, nil
		})
	srv := w.serve("crm-mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	cfg := mcptoolset.Config{Endpoint: srv.srv.URL}
	var ts tool.Toolset
	if w.guarded {
		g := must(mcpguard.New(mcpguard.Config{Dependency: "crm-mcp", Callbacks: w.cb, Toolset: cfg}))
		w.t.Cleanup(func() { _ = g.Close() })
		ts = g
	} else {
		ts = must(mcptoolset.New(cfg))
		if c, ok := ts.(io.Closer); ok {
			w.t.Cleanup(func() { _ = c.Close() })
		}
	}
	return llm(w, llmagent.Config{Name: "root", Instruction: "Answer from the CRM.", Toolsets: []tool.Toolset{ts},
		Model: w.model("root-model", toolThenEcho("root: ", fc("crm_search", customer("42"))))})
}
