package mcpguard

import (
	"log/slog"
	"time"

	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
)

// Defaults of Config.
const (
	defaultTimeout     = 30 * time.Second
	defaultListTimeout = 10 * time.Second
	maxTimeout         = time.Hour
)

// ConfigError is the error New returns for an invalid value.
type ConfigError = agentbreaker.ConfigError

// Config configures [New].
type Config struct {
	// Dependency is the dependency key every tool of the server is bound to. A key the
	// dependency map does not configure is created with its default policy. Required.
	Dependency string
	// Callbacks is the agentbreaker plugin that guards the agent's tool calls: its
	// dependency map receives the tools, its Config.MutatingTools decides which
	// calls are sent at most once, and, with its Retrier, those calls carry their
	// operation's idempotency key in _meta (IdempotencyKeyMeta). Required.
	Callbacks *callbacks.Callbacks
	// Toolset configures the MCP tool set, as for mcptoolset.New: Transport, or
	// Endpoint for streamable HTTP, and the optional Client, Auth and confirmation
	// settings. New wraps its transport; pass the transport itself, not a tool set
	// built from it. New adds a sending middleware (the idempotency key) to the
	// Client, when one is given. Transport or Endpoint is required.
	Toolset mcptoolset.Config
	// Timeout bounds each tool call (package tooltimeout); a call past it fails as a
	// timeout (UNKNOWN, counted) and leaves no goroutine behind once the server lets
	// go. Negative means no timeout: a hanging server then holds the turn until the
	// run's own deadline, but the call costs no allocation here. Defaults to
	// 30s; at most 1h.
	Timeout time.Duration
	// ListTimeout bounds each listing of the server's tools; a listing past it counts
	// as a failed listing. Negative means no timeout. Defaults to 10s;
	// at most 1h.
	ListTimeout time.Duration
	// Logger receives a record for each failed or skipped listing and each refused
	// second send, with the dependency key, the tool and the failure's class (never
	// the server's text). Defaults to discarding everything.
	Logger *slog.Logger
}

func (cfg Config) withDefaults() (Config, error) {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "mcpguard", Field: field, Value: v, Problem: problem}
	}
	switch {
	case cfg.Dependency == "":
		return cfg, bad("Config.Dependency", cfg.Dependency, "required")
	case cfg.Callbacks == nil:
		return cfg, bad("Config.Callbacks", "nil", "required (the agentbreaker plugin of the runner)")
	case cfg.Toolset.Transport == nil && cfg.Toolset.Endpoint == "":
		return cfg, bad("Config.Toolset.Transport", "nil", "Config.Toolset.Endpoint is empty too: one of them is required")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.ListTimeout == 0 {
		cfg.ListTimeout = defaultListTimeout
	}
	if cfg.Timeout > maxTimeout {
		return cfg, bad("Config.Timeout", cfg.Timeout, "must be at most 1h (0 for the default, "+defaultTimeout.String()+"; negative for none)")
	}
	if cfg.ListTimeout > maxTimeout {
		return cfg, bad("Config.ListTimeout", cfg.ListTimeout, "must be at most 1h (0 for the default, "+defaultListTimeout.String()+"; negative for none)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}
