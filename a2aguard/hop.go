package a2aguard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/adk/v2/server/adka2a/v2"

	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/redact"
)

// One budget across the A2A hop (docs/side-effects.md). A remote task is an invocation
// of the remote's runner: by itself, nothing of the caller's operation crosses the
// wire, the root model's re-issue of a remote agent is new work at the remote, and a
// remote agent that answers its inner failure in words looks healthy to the caller.
// Two marks, both under MetadataKey, carry what the plugin's hops rule needs:
//
//   - request metadata, operation_scope: a digest of the caller's operation scope
//     (callbacks.OperationScope). A remote served through Serve tracks its calls as
//     operations of that scope, so a re-issue is a retry there, charged to the remote
//     dependency's retry budget.
//   - task metadata, inner_failure: the first call of the task that failed or was
//     refused (outcome "failed", dependency, error_class, retryable). The caller's
//     guard classifies the request FAILED (neutral: the remote's breaker judged the
//     call) and marks the agent-tool call it runs under, whose re-issue is then a
//     retry of the caller's operation. The remote's own words still reach the caller.
//
// A mark can only make a call count as failed, or its repeats as retries: one that is
// malformed (wrong types, an unknown outcome, an oversized scope) is ignored, and the
// request is treated as one from, or the answer as one of, a remote without
// agentbreaker.

const (
	fieldScope   = "operation_scope"
	fieldInner   = "inner_failure"
	fieldOutcome = "outcome"
	fieldDep     = "dependency"
	fieldClass   = "error_class"
	fieldRetry   = "retryable"
	outcomeFail  = "failed"
	maxScopeLen  = 64
)

// scopeDigest is what a request says of the caller's operation scope: an opaque,
// fixed-size digest (the remote needs only to tell scopes apart), or "" for none.
func scopeDigest(scope string) string {
	if scope == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(scope))
	return hex.EncodeToString(sum[:16])
}

// markRequest puts the caller's operation scope in the request's metadata (a copy:
// the map may be the caller's), for the client to send (wireRequest), which takes it
// off again. It runs in the before-request callback, which alone sees the callback
// context the scope is read from.
func (g *guard) markRequest(ctx context.Context, req *a2a.SendMessageRequest) {
	d := scopeDigest(g.cb.OperationScope(ctx))
	if d == "" || req == nil {
		return
	}
	meta := maps.Clone(req.Metadata)
	if meta == nil {
		meta = make(map[string]any, 1)
	}
	meta[MetadataKey] = map[string]any{fieldScope: d}
	req.Metadata = meta
}

// wireRequest returns the request to send for req: req itself, or, when markRequest
// marked it, a copy that carries the mark, and then req loses the mark. adk-go's
// remote agent keeps req and copies it into the event that ends the run
// (CustomMetadata "a2a:request"), which the user reads and the session stores (issue
// 47): the scope is for the remote, so only the request on the wire names it. The
// copy shares the message; nothing here changes it.
func wireRequest(req *a2a.SendMessageRequest) *a2a.SendMessageRequest {
	if req == nil {
		return req
	}
	m, ok := req.Metadata[MetadataKey].(map[string]any)
	if !ok || len(m) != 1 {
		return req
	}
	if _, ok := m[fieldScope].(string); !ok {
		return req
	}
	wire := *req
	kept := maps.Clone(req.Metadata)
	delete(kept, MetadataKey)
	if len(kept) == 0 {
		kept = nil // as adk-go built it: no metadata
	}
	req.Metadata = kept
	return &wire
}

// callerScope reads the operation scope from a request's metadata: a string of 1 to
// 64 letters, digits, '-' or '_', else "".
func callerScope(meta map[string]any) string {
	m, ok := meta[MetadataKey].(map[string]any)
	if !ok {
		return ""
	}
	s, ok := m[fieldScope].(string)
	if !ok || s == "" || len(s) > maxScopeLen {
		return ""
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_') {
			return ""
		}
	}
	return s
}

// innerMark reads the inner-failure mark of a remote's final event: ok only for a
// well-formed mark with outcome "failed". An unknown class reads as unclassified.
func innerMark(ev a2a.Event) (callbacks.InnerFailure, bool) {
	var meta map[string]any
	switch e := ev.(type) {
	case *a2a.Task:
		if e != nil {
			meta = e.Metadata
		}
	case *a2a.TaskStatusUpdateEvent:
		if e != nil {
			meta = e.Metadata
		}
	case *a2a.Message:
		if e != nil {
			meta = e.Metadata
		}
	}
	m, ok := meta[MetadataKey].(map[string]any)
	if !ok {
		return callbacks.InnerFailure{}, false
	}
	in, ok := m[fieldInner].(map[string]any)
	if !ok {
		return callbacks.InnerFailure{}, false
	}
	if o, _ := in[fieldOutcome].(string); o != outcomeFail {
		return callbacks.InnerFailure{}, false
	}
	var f callbacks.InnerFailure
	class, _ := in[fieldClass].(string)
	if len(class) > 64 || !classify.Class(class).Known() {
		class = string(classify.ClassUnclassified)
	}
	f.Class = classify.Class(class)
	f.Retryable, _ = in[fieldRetry].(bool)
	if d, _ := in[fieldDep].(string); d != "" {
		f.Dependency = redact.Clean(d, redact.MaxNameLen)
	}
	return f, true
}

// Serve returns cfg with the remote service's half of the A2A hop installed, for
// adka2a.NewExecutor: a task is run under the caller's operation scope when the
// request names one (a caller guarded by New), and its first failed or refused call,
// as cb (the remote runner's agentbreaker plugin) saw it, is marked on the task's
// final status. The remote's answer is unchanged. Callbacks cfg already has run
// after Serve's before, and before its after.
//
//	exec := adka2a.NewExecutor(a2aguard.Serve(cb, adka2a.ExecutorConfig{RunnerConfig: rc}))
func Serve(cb *callbacks.Callbacks, cfg adka2a.ExecutorConfig) adka2a.ExecutorConfig {
	before, after := cfg.BeforeExecuteCallback, cfg.AfterExecuteCallback
	cfg.BeforeExecuteCallback = func(ctx context.Context, rc *a2asrv.ExecutorContext) (context.Context, error) {
		var caller string
		if rc != nil {
			caller = callerScope(rc.Metadata)
		}
		ctx, done := cb.ServeRemote(ctx, caller)
		ctx = context.WithValue(ctx, servedKey{}, done)
		if before != nil {
			return before(ctx, rc)
		}
		return ctx, nil
	}
	cfg.AfterExecuteCallback = func(ctx adka2a.ExecutorContext, final *a2a.TaskStatusUpdateEvent, err error) error {
		if done, ok := ctx.Value(servedKey{}).(func() (callbacks.InnerFailure, bool)); ok && final != nil {
			if f, failed := done(); failed {
				meta := maps.Clone(final.Metadata)
				if meta == nil {
					meta = make(map[string]any, 1)
				}
				meta[MetadataKey] = map[string]any{fieldInner: map[string]any{
					fieldOutcome: outcomeFail, fieldDep: f.Dependency, fieldClass: string(f.Class), fieldRetry: f.Retryable,
				}}
				final.Metadata = meta
			}
		}
		if after != nil {
			return after(ctx, final, err)
		}
		return nil
	}
	return cfg
}

type servedKey struct{}
