package breakertest

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

// HarnessConfig configures a [Harness].
type HarnessConfig struct {
	// Agent is the root agent. Required.
	Agent agent.Agent
	// Plugins are registered with the runner, in order.
	Plugins []*plugin.Plugin
	// AppName names the app in sessions. Defaults to "breakertest".
	AppName string
	// UserID is the user of every session. Defaults to "user".
	UserID string
	// RunConfig is passed to every run. Defaults to the zero RunConfig (no streaming).
	RunConfig agent.RunConfig
}

// Harness runs turns through the real adk-go runner with an in-memory session store.
// It is safe for concurrent use by turns on different sessions.
type Harness struct {
	// Runner is the adk-go runner the turns go through.
	Runner *runner.Runner
	// Sessions is the session store, for tests that inspect persisted events.
	Sessions session.Service

	cfg HarnessConfig
}

// NewHarness builds the runner.
func NewHarness(cfg HarnessConfig) (*Harness, error) {
	if cfg.Agent == nil {
		return nil, &ConfigError{Package: "breakertest", Field: "HarnessConfig.Agent", Value: "nil", Problem: "required"}
	}
	if cfg.AppName == "" {
		cfg.AppName = "breakertest"
	}
	if cfg.UserID == "" {
		cfg.UserID = "user"
	}
	sessions := session.InMemoryService()
	r, err := runner.New(runner.Config{
		AppName:        cfg.AppName,
		Agent:          cfg.Agent,
		SessionService: sessions,
		PluginConfig:   runner.PluginConfig{Plugins: cfg.Plugins},
	})
	if err != nil {
		return nil, fmt.Errorf("breakertest: runner: %w", err)
	}
	return &Harness{Runner: r, Sessions: sessions, cfg: cfg}, nil
}

// MustNewHarness is NewHarness that panics on error.
func MustNewHarness(cfg HarnessConfig) *Harness {
	h, err := NewHarness(cfg)
	if err != nil {
		panic(err)
	}
	return h
}

// NewSession creates a session and returns its ID.
func (h *Harness) NewSession(ctx context.Context) (string, error) {
	resp, err := h.Sessions.Create(ctx, &session.CreateRequest{AppName: h.cfg.AppName, UserID: h.cfg.UserID})
	if err != nil {
		return "", fmt.Errorf("breakertest: create session: %w", err)
	}
	return resp.Session.ID(), nil
}

// Turn is what one run produced. It is a plain result: read it from any goroutine once
// Run has returned.
type Turn struct {
	// Events are every event the runner yielded, in order.
	Events []*session.Event
	// Errs are the errors the runner yielded; the run continues past some of them.
	Errs []error
}

// Run sends text as the user's message and runs the turn to its end. The error is the
// first one the runner yielded, or the session store's.
func (h *Harness) Run(ctx context.Context, sessionID, text string) (*Turn, error) {
	t := &Turn{}
	msg := genai.NewContentFromText(text, genai.RoleUser)
	for ev, err := range h.Runner.Run(ctx, h.cfg.UserID, sessionID, msg, h.cfg.RunConfig) {
		if err != nil {
			t.Errs = append(t.Errs, err)
			continue
		}
		if ev != nil {
			t.Events = append(t.Events, ev)
		}
	}
	if len(t.Errs) > 0 {
		return t, t.Errs[0]
	}
	return t, nil
}

// InvocationID returns the invocation of the turn's first event, or "".
func (t *Turn) InvocationID() string {
	for _, ev := range t.Events {
		if ev.InvocationID != "" {
			return ev.InvocationID
		}
	}
	return ""
}

// FinalText returns the text of the last event that has text and no function call.
func (t *Turn) FinalText() string {
	for i := len(t.Events) - 1; i >= 0; i-- {
		ev := t.Events[i]
		if ev.Content == nil || ev.Partial {
			continue
		}
		var sb strings.Builder
		calls := false
		for _, p := range ev.Content.Parts {
			if p == nil {
				continue
			}
			calls = calls || p.FunctionCall != nil
			sb.WriteString(p.Text)
		}
		if !calls && sb.Len() > 0 {
			return sb.String()
		}
	}
	return ""
}

// FunctionCalls returns every function call the model made, in order.
func (t *Turn) FunctionCalls() []*genai.FunctionCall {
	var out []*genai.FunctionCall
	for _, ev := range t.Events {
		if ev.Content == nil || ev.Partial {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p != nil && p.FunctionCall != nil {
				out = append(out, p.FunctionCall)
			}
		}
	}
	return out
}

// FunctionResponses returns every tool result handed back to the model, in order.
func (t *Turn) FunctionResponses() []*genai.FunctionResponse {
	var out []*genai.FunctionResponse
	for _, ev := range t.Events {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p != nil && p.FunctionResponse != nil {
				out = append(out, p.FunctionResponse)
			}
		}
	}
	return out
}
