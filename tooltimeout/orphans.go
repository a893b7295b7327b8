package tooltimeout

import (
	"context"
	"fmt"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// CloseOrphans answers the function calls of one invocation that have no response in
// the session, so the next turn does not send the model a call it never saw answered.
// Each answer is an outcome-unknown payload (the call may have reached its dependency
// before the turn was cut short). It returns the IDs of the calls it answered.
func CloseOrphans(ctx context.Context, sessions session.Service, appName, userID, sessionID, invocationID string) ([]string, error) {
	resp, err := sessions.Get(ctx, &session.GetRequest{AppName: appName, UserID: userID, SessionID: sessionID})
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
			ID:   c.fc.ID,
			Name: c.fc.Name,
			Response: payloads.OutcomeUnknown(payloads.Info{
				Dependency: c.fc.Name, Tool: c.fc.Name, Class: classify.ClassDeadline,
			}),
		}}}}
		if err := sessions.AppendEvent(ctx, sess, ev); err != nil {
			return closed, fmt.Errorf("tooltimeout: answer orphan call %s: %w", c.fc.ID, err)
		}
		answered[c.fc.ID] = true
		closed = append(closed, c.fc.ID)
	}
	return closed, nil
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
