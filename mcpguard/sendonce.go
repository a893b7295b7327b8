package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/classify"
)

// ErrNotResent is in the chain of the error of a mutating call whose second send the
// guard refused: the first send reached the server (or may have), its connection
// closed before an answer, and adk-go's connection refresher tried to send it again.
// The call's outcome is UNKNOWN: the server may have applied it.
var ErrNotResent = errors.New("mcpguard: a mutating call was already sent once; not sent again")

// notResent is the classification of such a call: sent, outcome unknown, and counted,
// because a connection that closes under a call is the dependency's failure.
var notResent = classify.Classification{Outcome: classify.Unknown, Class: classify.ClassTransport, Verdict: classify.Counts}

// resendError returns the error for a refused second send of tool. Its text is fixed:
// it is written for the model and the operator and holds nothing of the server's.
func resendError(tool string) error {
	return fmt.Errorf("%w (tool %q): %w", ErrNotResent, tool, &classify.ToolError{
		Classification: notResent,
		Message:        "the call was sent and the connection closed before an answer: it may have been applied",
	})
}

// onceKey is the context key of a mutating call's send-once state.
type onceKey struct{}

// onceContext is the tool context of one logical call of a mutating tool, with the
// state the transport consults: adk-go hands a tool's context down to the MCP
// session, which passes it (or a context derived from it) to every write the call
// makes, the refresher's second send included.
//
// A call may legitimately be written more than once: under the MCP protocol of
// 2026-07-28 a server can answer a tools/call with "input required" (or "busy"), and
// the SDK sends the call again with the input (SEP-2322). Those sends follow an
// answer. What must not happen is a second send while the first one is unanswered:
// that is the refresher re-sending after the connection closed under the call.
type onceContext struct {
	agent.Context
	tool  string
	state atomic.Int32 // unsent, inFlight or answered
}

const (
	unsent   int32 = iota // no write, or none that can have reached the server
	inFlight              // written; no answer seen yet
	answered              // the server answered the last write
)

func (c *onceContext) Value(key any) any {
	if key == (onceKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// onceOf returns the send-once state of the call ctx belongs to, or nil for a call
// that may be sent again (read-only tools) and for writes that are not calls.
func onceOf(ctx context.Context) *onceContext {
	c, _ := ctx.Value(onceKey{}).(*onceContext)
	return c
}

// claim is called before a tools/call write of the call; it returns the error to
// return instead of writing, or nil. A write is refused while an earlier one is in
// flight, unanswered.
func (c *onceContext) claim() error {
	if c.state.CompareAndSwap(unsent, inFlight) || c.state.CompareAndSwap(answered, inFlight) {
		return nil
	}
	return resendError(c.tool)
}

// settle is called after the write with its error: a write that provably sent
// nothing (the dial failed, the server answered that it does not know the session)
// gives the claim back, so the refresher may send the call on a new connection.
func (c *onceContext) settle(err error, notSent bool) {
	if notSent || err != nil && classify.Classify(classify.Input{Err: err}).Outcome == classify.FailedBeforeSend {
		c.state.Store(unsent)
	}
}

// answer records that the server answered the write in flight.
func (c *onceContext) answer() { c.state.CompareAndSwap(inFlight, answered) }
