package a2aguard

import (
	"fmt"
	"net/http"
	"time"

	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/internal/configerr"
	"github.com/agentbreaker/agentbreaker/redact"
)

// Defaults of Config.
const (
	// defaultTimeout bounds one request to the remote agent. The a2a client's own
	// default is three minutes (a2aclient's defaultRequestTimeout), longer than most
	// turns: a hang would end as the turn's deadline, which is neutral, and the
	// remote's breaker would never trip.
	defaultTimeout = 30 * time.Second
	// defaultTurnReserve is the share of the time left before the caller's deadline (the
	// turn's, or the tool timeout of the AgentTool call) that a request leaves unused,
	// so that the request times out first, counts, and the turn still has time to
	// answer.
	defaultTurnReserve = 0.1
	maxTimeout         = time.Hour
	maxAnswer          = 512 // bytes of the remote's own words passed on, as for tools
)

// ConfigError is the error New returns for an invalid value.
type ConfigError = agentbreaker.ConfigError

// Config configures [New].
type Config struct {
	// Dependency is the dependency key the remote agent's requests are guarded under:
	// its breaker is the one the plugin's dependency map has (or creates, with the
	// default policy) for this key. Required.
	Dependency string
	// Callbacks is the agentbreaker plugin registered with the runner. Its dependency
	// map holds the breaker, its clock times holds, and its MutatingTools decide
	// whether a request of unknown outcome is answered with the outcome-unknown
	// payload (list Agent.Name there for a remote agent that changes things).
	// Required.
	Callbacks *callbacks.Callbacks
	// Agent configures the remote agent, as for remoteagent.NewA2A (adk-go's
	// agent/remoteagent/v2): Name and AgentCard (or AgentCardProvider) are required.
	// New prepends its callbacks to BeforeRequestCallbacks and AfterRequestCallbacks,
	// so yours see its answers. With ClientProvider nil (the usual case) New builds
	// the a2a client over HTTPClient; a ClientProvider of yours is wrapped instead
	// (deadlines, final states and the breaker apply), and then HTTP statuses and
	// Retry-After are not recorded: such a failure is classified from its error alone.
	Agent remoteagent.A2AConfig
	// HTTPClient is the HTTP client the a2a client uses (JSON-RPC and REST). New copies
	// it and wraps its Transport to record statuses, Retry-After and transport errors
	// per request; its Timeout is kept only if shorter than Timeout. Defaults to a
	// client over http.DefaultTransport.
	HTTPClient *http.Client
	// Timeout bounds each request to the remote agent, streamed answers included,
	// and replaces the a2a client's three-minute default. It is further bounded by the
	// caller's deadline less TurnReserve. A request past it is a timeout: UNKNOWN,
	// counted. Negative means no timeout of its own (the caller's deadline, less
	// TurnReserve, still applies). Defaults to 30s; at most 1h.
	Timeout time.Duration
	// TurnReserve is the share (0 to 0.9) of the time left before the caller's
	// deadline that each request leaves for the turn to answer. Zero means
	// 0.1; negative means none (the request may run to the
	// caller's deadline, and a hang then ends as the turn's deadline: neutral).
	TurnReserve float64
}

func (cfg Config) withDefaults() (Config, error) {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "a2aguard", Field: field, Value: v, Problem: problem}
	}
	switch {
	case cfg.Dependency == "":
		return cfg, bad("Config.Dependency", cfg.Dependency, "required")
	case cfg.Callbacks == nil:
		return cfg, bad("Config.Callbacks", "nil", "required (the agentbreaker plugin of the runner)")
	case cfg.Agent.Name == "":
		return cfg, bad("Config.Agent.Name", cfg.Agent.Name, "required (the remote agent's name; the root transfers to it by name)")
	case cfg.Agent.AgentCard == nil && cfg.Agent.AgentCardProvider == nil:
		return cfg, bad("Config.Agent.AgentCard", "nil", "Config.Agent.AgentCardProvider is nil too: one of them is required")
	}
	if err := redact.CheckName("Config.Dependency", cfg.Dependency); err != nil {
		return cfg, configerr.Relabel(err, "a2aguard", "", "")
	}
	if err := redact.CheckName("Config.Agent.Name", cfg.Agent.Name); err != nil {
		return cfg, configerr.Relabel(err, "a2aguard", "", "")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.Timeout > maxTimeout {
		return cfg, bad("Config.Timeout", cfg.Timeout, "must be at most 1h (0 for the default, "+defaultTimeout.String()+"; negative for none)")
	}
	switch {
	case cfg.TurnReserve == 0:
		cfg.TurnReserve = defaultTurnReserve
	case cfg.TurnReserve < 0:
		cfg.TurnReserve = 0
	case cfg.TurnReserve > 0.9 || cfg.TurnReserve != cfg.TurnReserve: // NaN too
		return cfg, bad("Config.TurnReserve", cfg.TurnReserve, fmt.Sprintf("must be at most 0.9 (0 for the default, %g; negative for none)", defaultTurnReserve))
	}
	return cfg, nil
}
