package a2aguard

import (
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/redact"
)

// MetadataKey is the key of session.Event.CustomMetadata under which the guard's own
// events carry agentbreaker's payload (a map with response_type, status, dependency,
// error_class, reason, instruction, retry_after_seconds, as package payloads builds
// it), and its answers carrying the remote's own words a smaller map (status
// "refused", dependency, error_class). A program reading the events recognises
// them by it; the model and the user read the event's text, which says the same.
const MetadataKey = "agentbreaker"

// StatusRefused is the status in the metadata of an event that passes on the remote
// agent's own words for a refusal.
const StatusRefused = "refused"

// Instructions in the guard's events, phrased for a root agent or a model that
// handed work to the remote agent (the payloads' own speak of tools).
const (
	instructionUnavailable = "Do not hand this request to the remote agent again now. Tell the user this part cannot be done at the moment and continue without it."
	instructionFailed      = "Do not repeat this request now. Tell the user this part could not be done and continue without it."
)

// own reports whether ev is one of the guard's refusals.
func own(ev *session.Event) bool {
	if ev == nil {
		return false
	}
	m, ok := ev.CustomMetadata[MetadataKey].(map[string]any)
	return ok && payloads.Is(m)
}

// refusal is the event for a request not sent: the breaker refused it, or the remote's
// stated delay has not passed.
func (g *guard) refusal(ctx agent.Context, class classify.Class, wait time.Duration) *session.Event {
	p := payloads.Unavailable(payloads.Info{Dependency: g.dep, Tool: g.name, Class: class, RetryAfter: wait})
	p[payloads.KeyInstruction] = instructionUnavailable
	return g.event(ctx, p)
}

// failure is the event for a request that reached the remote and failed: the
// payload's reason is built from the class alone, never from what the remote or the
// transport wrote.
func (g *guard) failure(ctx agent.Context, cls classify.Classification) *session.Event {
	in := payloads.Info{Dependency: g.dep, Tool: g.name, Class: cls.Class, RetryAfter: cls.RetryAfter}
	if g.mutating && cls.Outcome == classify.Unknown {
		return g.event(ctx, payloads.OutcomeUnknown(in))
	}
	p := payloads.Failed(in)
	p[payloads.KeyInstruction] = instructionFailed
	return g.event(ctx, p)
}

func (g *guard) event(ctx agent.Context, p map[string]any) *session.Event {
	reason, _ := p[payloads.KeyReason].(string)
	instr, _ := p[payloads.KeyInstruction].(string)
	ev := g.newEvent(ctx)
	ev.Content = genai.NewContentFromText(reason+" "+instr, genai.RoleModel)
	ev.CustomMetadata = map[string]any{MetadataKey: p}
	ev.TurnComplete = true
	return ev
}

// answer passes on the remote agent's own words for a refusal (a task it rejected, or
// failed with words that name no outage), as the answer boundary does for a tool: at
// most 512 bytes, control characters removed, secret shapes masked.
func (g *guard) answer(ctx agent.Context, out outcome) *session.Event {
	ev := g.newEvent(ctx)
	ev.Content = genai.NewContentFromText(redact.Answer(out.words, maxAnswer), genai.RoleModel)
	ev.CustomMetadata = map[string]any{MetadataKey: map[string]any{
		payloads.KeyStatus:     StatusRefused,
		payloads.KeyDependency: payloads.CleanName(g.dep),
		payloads.KeyErrorClass: string(out.cls.Class),
	}}
	ev.TurnComplete = true
	return ev
}

// newEvent is adka2a.NewRemoteAgentEvent for a callback context, which cannot name
// its agent (Agent() is not supported there): the guard knows the name.
func (g *guard) newEvent(ctx agent.Context) *session.Event {
	ev := session.NewEvent(ctx, ctx.InvocationID())
	ev.Author = g.name
	ev.Branch = ctx.Branch()
	return ev
}
