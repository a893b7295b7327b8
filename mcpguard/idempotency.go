package mcpguard

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbreaker/agentbreaker/retry"
)

// IdempotencyKeyMeta is the key under which a mutating call carries its operation's
// idempotency key in the MCP request's _meta (mcp.CallToolParams.Meta): a call of a
// tool in the plugin's MutatingTools, when the plugin has a Retrier
// (callbacks.SideEffects.Retry), is sent with
//
//	"_meta": {"io.github.agentbreaker/idempotency-key": "<key>"}
//
// The key is the same for every attempt of the logical operation (the model's
// identical re-issues, a replay the user confirmed), and it is the key the journal
// records for the attempt (journal.Intent.IdempotencyKey), so a server that keeps it
// with what it applied can apply a repeated call once and answer a status lookup
// (StatusLookup). The name follows the MCP rules for _meta keys: a reverse-DNS
// prefix the project controls (its home is github.com/agentbreaker; a second label of
// "modelcontextprotocol" or "mcp" is reserved for MCP itself) and a name of letters and
// hyphens. A server reads it from the request's Params.Meta (Go SDK:
// req.Params.Meta[IdempotencyKeyMeta]).
const IdempotencyKeyMeta = "io.github.agentbreaker/idempotency-key"

// keyClient returns the MCP client the tool set uses, with a sending middleware that
// puts a mutating call's idempotency key into its _meta: c itself when given (the
// middleware is added to it), else a client like the one mcptoolset makes. The key
// is set on the call's own parameters, so every send of the call carries it: a send
// after "input required" (SEP-2322) too.
func keyClient(c *mcp.Client) *mcp.Client {
	if c == nil {
		// mcptoolset's default client, under the same name.
		c = mcp.NewClient(&mcp.Implementation{Name: "adk-mcp-client", Version: "2.0.0"}, nil)
	}
	c.AddSendingMiddleware(sendKey)
	return c
}

// sendKey is the sending middleware: for a tools/call of a mutating call whose context
// carries the operation's key, it sets the key in the call's _meta. Everything else
// passes untouched, without allocating.
func sendKey(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != methodCallTool || onceOf(ctx) == nil {
			return next(ctx, method, req)
		}
		key := retry.IdempotencyKeyFrom(ctx)
		p, ok := req.GetParams().(*mcp.CallToolParams)
		if key == "" || !ok || p == nil {
			return next(ctx, method, req)
		}
		if p.Meta == nil {
			p.Meta = mcp.Meta{}
		}
		p.Meta[IdempotencyKeyMeta] = key
		return next(ctx, method, req)
	}
}
