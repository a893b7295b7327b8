package callbacks

import (
	"log/slog"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// BeforeModel returns the before-model callback for llmagent.Config: the loop guard's
// cap and tool hiding, the docstring sentence, then Config.Model.Before. It must be
// the first of the agent's before-model callbacks.
func (c *Callbacks) BeforeModel() llmagent.BeforeModelCallback { return c.beforeModel(agentLayer) }

// AfterModel returns Config.Model.After wrapped so it runs once per response when the
// plugin and agent-level callbacks are both installed; nil when there is none.
func (c *Callbacks) AfterModel() llmagent.AfterModelCallback {
	if c.cfg.Model.After == nil {
		return nil
	}
	return c.afterModel
}

// OnModelError returns Config.Model.OnError wrapped like AfterModel; nil when there is
// none.
func (c *Callbacks) OnModelError() llmagent.OnModelErrorCallback {
	if c.cfg.Model.OnError == nil {
		return nil
	}
	return c.onModelError
}

func (c *Callbacks) beforeModel(l layer) llmagent.BeforeModelCallback {
	return func(ctx agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
		inv := c.invocation(ctx, true)
		if inv.lastReq.Swap(req) == req {
			return nil, nil // the other layer handled this request
		}
		if resp := c.guardModelCall(ctx, inv, req); resp != nil {
			return resp, nil
		}
		if c.cfg.Model.Before != nil {
			defer c.recoverPanic(ctx, "model_before")
			return c.cfg.Model.Before(ctx, req)
		}
		return nil, nil
	}
}

// guardModelCall applies the loop guard and the docstrings to one model request. It
// returns the response that replaces the call when the cap is reached.
func (c *Callbacks) guardModelCall(ctx agent.Context, inv *invocation, req *model.LLMRequest) (resp *model.LLMResponse) {
	defer c.recoverPanic(ctx, "before_model")
	if inv.tracker.Total() > 0 {
		c.mirrorCounts(ctx, inv)
	}
	if n, ok := inv.tracker.ModelCall(); !ok {
		deps := inv.tracker.Dependencies()
		c.emit(ctx, Event{Kind: EventModelCallCapped, At: c.timeOf(c.nanos()), InvocationID: inv.id}, slog.LevelWarn,
			"agentbreaker: model-call cap reached while dependencies are unavailable; ending the turn",
			slog.Int("model_calls", n), slog.Any("dependencies", deps))
		return c.guard.CapResponse(inv.tracker)
	}
	set := c.toolSet(req)
	if len(set.guarded) == 0 {
		return nil
	}
	if c.guard.Config().HideOpenTools {
		depOf := func(name string) (string, bool) {
			if !set.guarded[name] {
				return "", false
			}
			return c.deps.DependencyOf(name)
		}
		if removed := c.guard.Filter(req, inv.tracker, depOf, c.open); len(removed) > 0 {
			c.emit(ctx, Event{Kind: EventToolsHidden, At: c.timeOf(c.nanos()), InvocationID: inv.id, Tools: removed},
				slog.LevelInfo, "agentbreaker: tools of open dependencies hidden from the model")
		}
	}
	if !c.cfg.Guidance.DisableDocstrings {
		set.addDocstrings(req, c.cfg.Guidance.Docstring)
	}
	return nil
}

// open reports whether a dependency's breaker refuses calls now: forced open, open
// with cooldown left, or half-open with every probe out. An open breaker whose
// cooldown is over is not: its state stays "open" until the next Allow, and that
// call, the probe, can only come from the model if the model is shown the tool.
// A breaker with a prober (package probe) refuses user calls until a probe closes it,
// so its tools stay hidden until then.
func (c *Callbacks) open(dep string) bool {
	b, ok := c.deps.Get(dep)
	if !ok || b.Shadow() {
		return false // in shadow mode the model is offered every tool
	}
	switch b.State() {
	case breaker.ForcedOpen:
		return true
	case breaker.Open, breaker.HalfOpen:
		return b.HasProber() || b.RetryAfter() > 0
	}
	return false
}

func (c *Callbacks) afterModel(ctx agent.Context, resp *model.LLMResponse, respErr error) (*model.LLMResponse, error) {
	if c.cfg.Model.After == nil {
		return nil, nil
	}
	if inv := c.invocation(ctx, true); resp != nil && inv.lastResp.Swap(resp) == resp {
		return nil, nil
	}
	defer c.recoverPanic(ctx, "model_after")
	return c.cfg.Model.After(ctx, resp, respErr)
}

func (c *Callbacks) onModelError(ctx agent.Context, req *model.LLMRequest, respErr error) (*model.LLMResponse, error) {
	if c.cfg.Model.OnError == nil {
		return nil, nil
	}
	if inv := c.invocation(ctx, true); req != nil && inv.lastErr.Swap(req) == req {
		return nil, nil
	}
	defer c.recoverPanic(ctx, "model_on_error")
	return c.cfg.Model.OnError(ctx, req, respErr)
}

// mirrorCounts writes the invocation's short-circuit counts into "temp:" state. It runs
// once per model call, after the previous step's tool calls have all ended: calls run
// in parallel cannot each write the count, because adk-go merges their state deltas
// with the last call in the list winning (ADK-NOTES #30). The count lives in the
// tracker; this is a mirror for the caller's eyes (it lands in the StateDelta of the
// model call's event).
func (c *Callbacks) mirrorCounts(ctx agent.Context, inv *invocation) {
	st := ctx.State()
	for _, dep := range inv.tracker.Dependencies() {
		_ = st.Set(c.guard.StateKey(dep), inv.tracker.Count(dep))
	}
}
