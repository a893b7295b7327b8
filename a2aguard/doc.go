// Package a2aguard guards a remote agent reached over A2A (adk-go's
// agent/remoteagent/v2) as an agentbreaker dependency, with one line:
//
//	billing, err := a2aguard.New(a2aguard.Config{
//		Dependency: "billing",
//		Callbacks:  cb, // the agentbreaker plugin registered with the runner
//		Agent:      remoteagent.A2AConfig{Name: "billing-agent", AgentCard: card},
//	})
//
// The returned agent goes where remoteagent.NewA2A's would: in a root's SubAgents,
// reached by transfer_to_agent (it runs in the root's invocation, where no tool
// callback sees it), or in agenttool.New, reached as a tool (it runs in a nested
// runner that streams, where the runner's plugins do not reach). Both are guarded
// the same way, at the request:
//
//   - Before each request the dependency's breaker is asked for a permit. While it
//     refuses (open, or half-open with its one probe out), or while a delay the
//     remote asked for (Retry-After on a 429 or 503) has not passed, the request is
//     not sent: the remote agent answers with an event of agentbreaker's in words
//     ("billing is temporarily unavailable: it is refusing connections. It may be
//     tried again in about 30 seconds. ..."), its payload in
//     CustomMetadata[MetadataKey]. A root or a model reads it as the agent's answer.
//   - Each request is bounded by Config.Timeout and by the caller's deadline (the
//     turn's, or the AgentTool call's) less Config.TurnReserve, in place of the a2a
//     client's three-minute default, so that a hanging remote counts as a timeout
//     and the turn still answers.
//   - Each request is classified by what happened, recorded by a round tripper
//     under the a2a client (a2a-go's errors are plain text): refused before
//     sending, an HTTP status with its Retry-After, a timeout, a transport error, a
//     JSON-RPC error, a task that ended failed or rejected. The outcome goes to the
//     breaker; the event adk-go would show (with the transport's text, "failed to
//     send HTTP request: Post ...", "unexpected HTTP status: 503 ...") is replaced
//     by agentbreaker's payload in words. A refusal the remote states itself (a
//     rejected task, a failed one whose words name no outage) is the remote
//     working: the breaker records a success (classify.Healthy), never a failure,
//     and its words reach the user, cleaned by redact.Answer.
//
// An AgentTool of the remote agent is a tool named after the agent; New keeps that
// name off the remote's breaker (it gets the key Dependency+"-agenttool"), so that
// the outer call cannot take the half-open probe of the request inside it.
//
// A remote service that runs agentbreaker itself builds its executor with
// adka2a.NewExecutor(Serve(cb, cfg)), and the root calls the guarded agent through
// the plugin's AgentTool: each request then names the root's operation scope, the
// remote tracks its calls under it (the root model's re-issue is a retry, charged to
// the remote dependency's budget), and the remote marks its task's first failed or
// refused call, which the root's guard classifies FAILED (neutral) while the remote's
// words pass on (hop.go; docs/a2a.md, "One budget across the hop"). Without Serve on
// the remote, nothing changes.
//
// The agent is safe for concurrent use, as remoteagent's is.
package a2aguard
