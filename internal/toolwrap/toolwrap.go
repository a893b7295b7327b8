// Package toolwrap holds what every agentbreaker tool wrapper needs to stand in for the
// tool it wraps in adk-go: the interface of a wrappable tool and the request
// processing that makes adk-go dispatch calls to the wrapper rather than to the inner
// tool (see ADK notes: a wrapper that delegates ProcessRequest is bypassed).
package toolwrap

import (
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolutils"
	"google.golang.org/genai"
)

// Inner is a tool a wrapper can wrap: a function tool with a declaration and Run, as
// functiontool, agenttool, mcptoolset and our own wrappers are.
type Inner interface {
	tool.Tool
	Declaration() *genai.FunctionDeclaration
	Run(ctx agent.Context, args any) (map[string]any, error)
}

type requestProcessor interface {
	ProcessRequest(ctx agent.Context, req *model.LLMRequest) error
}

// ProcessRequest runs inner's own request processing, keeping whatever it adds to the
// request, and then registers outer under the tool's name so that adk-go dispatches
// calls to outer. A tool without request processing is packed as outer directly.
func ProcessRequest(ctx agent.Context, req *model.LLMRequest, inner Inner, outer Inner) error {
	if rp, ok := inner.(requestProcessor); ok {
		_, existed := req.Tools[outer.Name()]
		if err := rp.ProcessRequest(ctx, req); err != nil {
			return err
		}
		if !existed && req.Tools[outer.Name()] != nil {
			req.Tools[outer.Name()] = outer
			return nil
		}
	}
	return toolutils.PackTool(req, outer)
}
