package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker/journal"
)

// statusArgument is the argument a status tool is called with: the idempotency key the
// mutation was sent with (IdempotencyKeyMeta).
const statusArgument = "idempotency_key"

// StatusLookup returns a journal.StatusLookup that asks an MCP server whether the call
// behind an intent was applied, through the server's read-only tool named tool. Give
// it the mcptoolset.Config of the server's guarded tool set (the same Endpoint or
// transport, HTTP client and Auth) and put it in journal.Config.Lookups under the tool
// set's Dependency; it needs neither the tool set nor the plugin, so it can be built
// before the journal they use.
//
//   - The tool is called with the arguments {"idempotency_key": "<key>"}: the key of the
//     intent (journal.Intent.IdempotencyKey), which is the key the mutation carried in
//     its _meta (IdempotencyKeyMeta). The key is in the lookup's own _meta too.
//   - It answers "applied", "not_applied" or "unknown", as structured content
//     {"status": "..."} or as text, and the lookup returns journal.StatusApplied,
//     journal.StatusNotApplied or journal.StatusUnknown. Any other answer, an isError
//     result or a failure to reach the server is StatusUnknown with an error (which
//     holds nothing of the server's text), and the intent waits for an operator.
//
// The server must answer "not_applied" only for a key it can vouch it never applied:
// the journal then lets the mutation be sent again. The tool must be read-only; do not
// list it in the plugin's MutatingTools.
//
// Each lookup opens a short session of its own (its HTTP status read as the tool set
// reads it), bounded by Config.Timeout's default (30s) and by ctx, and closes it. It is not a call the
// model made: no breaker admits or counts it. A transport that connects only once
// (mcp.CommandTransport, whose command the tool set starts; in-memory and I/O
// transports) cannot carry a second session, and StatusLookup refuses it, as it
// refuses an empty tool name: serve the server over streamable HTTP (Endpoint) to look
// statuses up. The returned lookup is safe for concurrent use.
func StatusLookup(ts mcptoolset.Config, tool string) (journal.StatusLookup, error) {
	bad := func(field string, v any, problem string) (journal.StatusLookup, error) {
		return nil, &ConfigError{Package: "mcpguard", Field: field, Value: v, Problem: problem}
	}
	if tool == "" {
		return bad("StatusLookup tool", tool, "required (the server's read-only tool that answers by idempotency key)")
	}
	if ts.Transport == nil && ts.Endpoint == "" {
		return bad("mcptoolset.Config.Transport", ts.Transport, `nil, and Endpoint is "": one is required`)
	}
	switch t := ts.Transport.(type) {
	case *mcp.CommandTransport, *mcp.InMemoryTransport, *mcp.IOTransport, *mcp.StdioTransport:
		return bad("mcptoolset.Config.Transport", fmt.Sprintf("%T", t), "connects only once and cannot carry a lookup's session; "+
			"serve the server over streamable HTTP (Endpoint) to look statuses up")
	}
	cfg, _, err := guardTransport(ts)
	if err != nil {
		return nil, fmt.Errorf("mcpguard: StatusLookup: %w", err)
	}
	// The guarded transport, without the tool set's tracking (a lookup closes its own
	// session).
	t := cfg.Transport.(*trackTransport).inner
	client := mcp.NewClient(&mcp.Implementation{Name: "agentbreaker-status-lookup", Version: "1"}, nil)
	return func(ctx context.Context, in journal.Intent) (journal.Status, error) {
		return lookup(ctx, client, t, tool, in.IdempotencyKey)
	}, nil
}

// lookup asks tool about key over a session of its own.
func lookup(ctx context.Context, client *mcp.Client, t mcp.Transport, tool, key string) (journal.Status, error) {
	if key == "" {
		return journal.StatusUnknown, errors.New("mcpguard: status lookup: the intent has no idempotency key")
	}
	ctx, cancel := context.WithTimeout(ctx, defaultTimeout)
	defer cancel()
	session, err := client.Connect(ctx, t, nil)
	if err != nil {
		return journal.StatusUnknown, fmt.Errorf("mcpguard: status lookup: connecting: %w", err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{
		Name:      tool,
		Arguments: map[string]any{statusArgument: key},
		Meta:      mcp.Meta{IdempotencyKeyMeta: key},
	})
	if err != nil {
		return journal.StatusUnknown, fmt.Errorf("mcpguard: status lookup: calling %q: %w", tool, err)
	}
	if res.IsError {
		// The server's text stays out: it may hold anything.
		return journal.StatusUnknown, fmt.Errorf("mcpguard: status lookup: %q answered with an error", tool)
	}
	switch answer := statusAnswer(res); answer {
	case journal.StatusApplied.String():
		return journal.StatusApplied, nil
	case journal.StatusNotApplied.String():
		return journal.StatusNotApplied, nil
	case journal.StatusUnknown.String():
		return journal.StatusUnknown, nil
	}
	return journal.StatusUnknown, fmt.Errorf(`mcpguard: status lookup: %q answered neither "applied", "not_applied" nor "unknown"`, tool)
}

// statusAnswer returns the status a result states: its structured content's "status",
// else its text.
func statusAnswer(res *mcp.CallToolResult) string {
	if m, ok := res.StructuredContent.(map[string]any); ok {
		s, _ := m["status"].(string)
		return s
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return strings.TrimSpace(b.String())
}
