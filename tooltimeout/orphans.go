package tooltimeout

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// CloseOrphans answers the function calls of one invocation that have no response in
// the session, so the next turn does not send the model a call it never saw answered.
// Each answer is an outcome-unknown payload (the call may have reached its dependency
// before the turn was cut short) naming the tool as the dependency. It returns the IDs
// of the calls it answered. CloseOrphansWith answers read-only tools differently and
// names the real dependency.
func CloseOrphans(ctx context.Context, sessions session.Service, appName, userID, sessionID, invocationID string) ([]string, error) {
	return CloseOrphansWith(ctx, sessions, Orphans{AppName: appName, UserID: userID, SessionID: sessionID, InvocationID: invocationID})
}

// Orphans says which calls CloseOrphansWith answers, and how.
type Orphans struct {
	// AppName, UserID, SessionID and InvocationID name the session and the invocation
	// whose calls are answered. Required.
	AppName, UserID, SessionID, InvocationID string
	// MutatingTools lists the tools with side effects, as callbacks.Config.SideEffects.MutatingTools
	// does. When it is non-nil, an orphaned call of any other tool is answered with the
	// unavailable payload ("the request ran out of time"; asking again in a later turn
	// is harmless), and only calls of these tools with the outcome-unknown payload ("do
	// not repeat this action"). Defaults to nil: nothing is known about side effects,
	// and every orphaned call gets the outcome-unknown payload, the safe answer.
	MutatingTools []string
	// DependencyOf names the dependency of a tool in the answers; pass
	// dependencymap.Map.DependencyOf. Defaults to nil: the tool's own name.
	DependencyOf func(tool string) (string, bool)
}

// CloseOrphansWith is CloseOrphans with the answers shaped by o.
func CloseOrphansWith(ctx context.Context, sessions session.Service, o Orphans) ([]string, error) {
	invocationID := o.InvocationID
	resp, err := sessions.Get(ctx, &session.GetRequest{AppName: o.AppName, UserID: o.UserID, SessionID: o.SessionID})
	if err != nil {
		return nil, fmt.Errorf("tooltimeout: close orphan calls: %w", err)
	}
	sess := resp.Session
	answered := map[string]bool{}
	type call struct {
		fc     *genai.FunctionCall
		author string
		branch string
	}
	var calls []call
	for ev := range sess.Events().All() {
		if ev == nil || ev.Content == nil || ev.Partial {
			continue
		}
		for _, p := range ev.Content.Parts {
			switch {
			case p == nil:
			case p.FunctionResponse != nil:
				answered[p.FunctionResponse.ID] = true
			case p.FunctionCall != nil && ev.InvocationID == invocationID && !isLongRunning(ev, p.FunctionCall.ID):
				calls = append(calls, call{p.FunctionCall, ev.Author, ev.Branch})
			}
		}
	}
	var closed []string
	for _, c := range calls {
		if c.fc.ID == "" || answered[c.fc.ID] {
			continue
		}
		ev := session.NewEvent(ctx, invocationID)
		ev.Author = c.author
		ev.Branch = c.branch
		ev.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
			ID:       c.fc.ID,
			Name:     c.fc.Name,
			Response: o.answer(c.fc.Name),
		}}}}
		if err := sessions.AppendEvent(ctx, sess, ev); err != nil {
			return closed, fmt.Errorf("tooltimeout: answer orphan call %s: %w", c.fc.ID, err)
		}
		answered[c.fc.ID] = true
		closed = append(closed, c.fc.ID)
	}
	return closed, nil
}

// answer is the payload for an orphaned call of tool.
func (o Orphans) answer(tool string) map[string]any {
	in := payloads.Info{Dependency: tool, Tool: tool, Class: classify.ClassDeadline}
	if o.DependencyOf != nil {
		if dep, ok := o.DependencyOf(tool); ok && dep != "" {
			in.Dependency = dep
		}
	}
	if o.MutatingTools != nil && !slices.Contains(o.MutatingTools, tool) {
		// A read-only call is harmless to repeat: it ran out of time, nothing more.
		return payloads.Unavailable(in)
	}
	return payloads.OutcomeUnknown(in)
}

// isLongRunning reports whether the call is one adk-go expects to be answered later.
func isLongRunning(ev *session.Event, id string) bool {
	for _, lr := range ev.LongRunningToolIDs {
		if lr == id {
			return true
		}
	}
	return false
}
