package classify

import (
	"encoding/json"
	"errors"
	"strings"
)

// adk-go's MCP toolset (tool/mcptoolset) turns a tool result with isError set into a
// plain error with this text, followed by " Details: " and the result's text content:
// nothing else in the error says that the server answered. And it returns
// mcpNoContent for a successful result without text content.
const (
	mcpFailed    = "Tool execution failed."
	mcpDetails   = mcpFailed + " Details: "
	mcpNoContent = "no text content in tool response"
)

// MCPToolFailure reports whether err is, or wraps, the error adk-go's MCP toolset
// returns for a tool result with isError set, and returns the result's text (empty
// when it had none). Transport failures of an MCP call are other errors: the server
// did not answer them.
func MCPToolFailure(err error) (details string, ok bool) {
	msg := errorText(innermost(err))
	switch {
	case msg == mcpFailed:
		return "", true
	case strings.HasPrefix(msg, mcpDetails):
		return msg[len(mcpDetails):], true
	}
	return "", false
}

// maxUnwrap bounds the walk down an error chain: a chain that wraps itself must not
// hang a call.
const maxUnwrap = 64

// innermost returns the end of err's chain of single wraps: adk-go's errors.New, when
// a wrapper added context with %w. A broken Unwrap method ends the walk where it is.
func innermost(err error) (inner error) {
	inner = err
	defer func() { _ = recover() }()
	for range maxUnwrap {
		u := errors.Unwrap(inner)
		if u == nil {
			return inner
		}
		inner = u
	}
	return inner
}

// mcpError classifies the errors adk-go's MCP toolset makes from a server's answer.
func mcpError(err error) (Classification, bool) {
	if errorText(innermost(err)) == mcpNoContent {
		return answered(ClassEmptyResult, 0), true
	}
	details, ok := MCPToolFailure(err)
	if !ok {
		return Classification{}, false
	}
	return MCPIsError(details), true
}

// MCPIsError classifies an MCP tool result with isError set, from its text. The server
// answered, so the outcome is always Failed, never Unknown. The text is read:
//
//   - as JSON, when it is an object: by the [ToolResult] rules for a failing map (a
//     status code, a failure name, an outage signal in its words);
//   - else for an outage signal, by the [TextSignal] rules ("HTTP 503", UNAVAILABLE,
//     RESOURCE_EXHAUSTED, a stack trace): http_5xx, http_429 or http_408, which count;
//   - else by a failure name before its first colon ("invalid argument: customer_id
//     must be numeric" is validation, "not found: order 7" is not_found);
//   - else it is [ClassRefused]: the server declined, and the breaker does not hear
//     of it.
//
// A server known to wrap its upstream's outages in other words needs a [Rule] for its
// dependency ([MatchText]).
func MCPIsError(details string) Classification {
	c := mcpDetailsClass(strings.TrimSpace(details))
	c.Outcome = Failed
	return c
}

func mcpDetailsClass(details string) Classification {
	if strings.HasPrefix(details, "{") {
		var m map[string]any
		if json.Unmarshal([]byte(details), &m) == nil {
			return inBandFailure(m)
		}
	}
	if c, ok := TextSignal(details); ok {
		return c
	}
	head, _, _ := strings.Cut(details, ":")
	if c, ok := failureFromWords([]map[string]any{{"error": head}}); ok {
		return c
	}
	return ForClass(ClassRefused)
}
