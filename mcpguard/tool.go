package mcpguard

import (
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/internal/toolwrap"
)

// guardedTool is one listed MCP tool as the agent sees it: the plugin guards its calls
// by its name (bound to the dependency key), and its Run marks the calls of a mutating
// tool for the send-once guard. One value is kept per tool while the server declares
// the same thing, so the model's declarations and the plugin's caches stay put.
type guardedTool struct {
	inner    toolwrap.Inner // the tooltimeout wrapper of the mcptoolset tool
	src      *genai.FunctionDeclaration
	timeout  time.Duration
	mutating bool
}

func (t *guardedTool) Name() string                            { return t.inner.Name() }
func (t *guardedTool) Description() string                     { return t.inner.Description() }
func (t *guardedTool) IsLongRunning() bool                     { return t.inner.IsLongRunning() }
func (t *guardedTool) Declaration() *genai.FunctionDeclaration { return t.src }
func (t *guardedTool) Timeout() time.Duration                  { return t.timeout }
func (t *guardedTool) Unwrap() tool.Tool                       { return t.inner }
func (t *guardedTool) ProcessRequest(ctx agent.Context, req *model.LLMRequest) error {
	return toolwrap.ProcessRequest(ctx, req, t.inner, t)
}

// Run calls the MCP tool. A mutating tool's call runs under a context that carries
// its send-once state down to the transport; a read-only call runs under the tool
// context as it is and costs nothing here.
func (t *guardedTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	if !t.mutating {
		return t.inner.Run(ctx, args)
	}
	return t.inner.Run(&onceContext{Context: ctx, tool: t.src.Name}, args)
}
