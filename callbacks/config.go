package callbacks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/loopguard"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
)

// ErrNoDependencies is what the *ConfigError New returns unwraps to when
// Config.Dependencies is nil.
var ErrNoDependencies = errors.New("callbacks: Config.Dependencies is nil: required")

// ConfigError is the error New returns for an invalid value.
type ConfigError = agentbreaker.ConfigError

// ModelCallbacks are model callbacks from another package (model failover) to bundle
// into the same plugin and the same agent instrumentation, after agentbreaker's own.
// Each is optional.
type ModelCallbacks struct {
	Before  llmagent.BeforeModelCallback
	After   llmagent.AfterModelCallback
	OnError llmagent.OnModelErrorCallback
}

// Config configures [Callbacks]. The zero value of every field but Dependencies means
// its default. The top level is the plugin's outline: which breakers, how outcomes are
// classified, and groups of their own: Guidance (what the model is told), SideEffects
// (mutating tools, retries, the journal, queued work), Bulkheads, Model (bundled model
// callbacks) and Observability.
type Config struct {
	// Name is the plugin's name; the dispatch marker plugin is Name + "-dispatch".
	// Defaults to "agentbreaker".
	Name string
	// Dependencies maps tools to their breakers. Required.
	Dependencies *dependencymap.Map

	// Classifier classifies every outcome. Defaults to the classify package's rules.
	Classifier *classify.Classifier
	// Classifiers overrides Classifier for some dependencies, by dependency key.
	// Defaults to none.
	Classifiers map[string]*classify.Classifier

	// Guidance is what the model is told: what an unavailable tool's payload offers
	// (a cached answer, alternatives, a partial result), what of a dependency's text
	// reaches it, the sentence added to tool descriptions, and the loop guard. The zero
	// value takes every default.
	Guidance Guidance

	// ExemptTools are never guarded, in addition to the dependency map's own exempt
	// tools and (unless GuardBuiltinTools) adk-go's built-in tools. Defaults to none.
	ExemptTools []string
	// GuardBuiltinTools puts adk-go's built-in tools (transfer_to_agent, exit_loop,
	// set_model_response, ...) behind breakers too. Defaults to false: they call no
	// dependency, and an agent that cannot transfer is worse off, not safer.
	GuardBuiltinTools bool

	// SideEffects says which tools change the world and how their calls are retried,
	// journaled and queued. Defaults to none: every tool is read-only.
	SideEffects SideEffects
	// Bulkheads caps concurrent calls per dependency. Defaults to none.
	Bulkheads Bulkheads
	// Model holds model callbacks to bundle (model failover's). Defaults to none.
	Model ModelCallbacks
	// Observability says where records, events and metrics go. Defaults to nowhere.
	Observability Observability

	// Clock tells the time for elapsed times, events and idle expiry. Defaults to a
	// coarse (about 1ms) monotonic reading of the system clock.
	Clock clock.Clock
	// IdleInvocationTimeout frees the state of an invocation that has seen no callback
	// for this long. The plugin frees state when each run ends, and AgentTool when the
	// sub-agent's run ends; this catches agents instrumented by hand, which have no
	// end-of-run hook. From 1m to 24h. Defaults to 30m.
	IdleInvocationTimeout time.Duration
}

// Guidance is what the model is told (Config.Guidance): the payload of a call agentbreaker
// answered, what of a dependency's own text reaches the model, what the tool
// descriptions say, and when the loop guard turns firm or hides a tool. Every field is
// optional; the zero value is the default behaviour.
type Guidance struct {
	// Cache, when set, stores last-good results of the tools it lists and offers them
	// in open-breaker payloads. Defaults to none.
	Cache *payloads.Cache
	// Alternatives names, per tool, other tools the model may use when it is
	// unavailable. Defaults to none.
	Alternatives map[string][]string
	// Fallback, when set, returns a partial result for a short-circuited call, or for a
	// call whose failure the model gets as agentbreaker's payload (see ErrorText), or nil.
	// It runs on the call's goroutine with no lock held; a panic in it is recovered.
	// Defaults to none.
	Fallback func(ctx agent.Context, tool string, args map[string]any) any
	// Redaction decides what of a dependency's text (error messages, in-band errors)
	// reaches the model and the operator; see [ErrorText] for the rule. Defaults to
	// the safe choice: a dependency's answers reach the model cleaned and bounded, its
	// failures only as agentbreaker's payload, and logs and events get a fingerprint.
	Redaction Redaction

	// LoopGuard configures the loop guard. Zero fields take loopguard's defaults.
	LoopGuard loopguard.Config
	// Docstring is the sentence added to guarded tools' descriptions before each model
	// call. Defaults to docstrings.Sentence.
	Docstring string
	// DisableDocstrings leaves tool descriptions alone. Defaults to false.
	DisableDocstrings bool
}

// SideEffects configures the tools that change the world (Config.SideEffects): which
// they are, how their calls are retried, journaled and queued, and who may release a
// replay whose outcome is unknown. The zero value treats every tool as read-only.
type SideEffects struct {
	// MutatingTools are tools with side effects. When one of their calls fails with
	// an UNKNOWN outcome that counts (a timeout after sending, a reset, most 5xx), the
	// model gets an outcome-unknown payload telling it not to repeat the action,
	// instead of the raw error. Their calls are never a half-open probe either: once
	// the cooldown is over they are answered unavailable (or queued, for QueueTools)
	// until a read-only call of the dependency, or its health probe, closes the
	// breaker (docs/probes.md). Defaults to none.
	MutatingTools []string

	// Retry, when set, puts every guarded call under a logical operation of this
	// Retrier (see retry.Retrier.Track): the model calling the same tool with the same
	// arguments again in one invocation is the operation's next attempt, refused with a
	// payload once its attempts, deadline or the dependency's retry budget are spent,
	// while an attempt of it is still running, or after an UNKNOWN outcome of a tool in
	// MutatingTools. Tools not in MutatingTools are declared idempotent. The breaker is
	// not given to the Retrier (these callbacks already hold its permit). To send the
	// operation's idempotency key, wrap tools with [Callbacks.WithIdempotencyKey].
	// Defaults to nil: no retry accounting.
	Retry *retry.Retrier
	// Journal reconciles UNKNOWN outcomes through the journal's status lookups
	// (journal.Journal.Reconciler), and makes each mutating call's intent durable
	// before its tool runs. Given without Retry, it is all the plugin needs: a
	// Retrier with the default policy is built on it (on Config.Clock, its
	// budget-exhausted refusals reported to Observability.Observer). Given with Retry,
	// build that Retrier with retry.Config.Journal = Journal.ForRetry(). Defaults to
	// nil: an UNKNOWN outcome of a mutating tool ends its operation unreconciled.
	Journal Journal
	// ConfirmUnknownReplays lets the user, rather than only an operator, decide whether
	// a call of a tool in MutatingTools is sent again after an earlier attempt of it
	// ended with an UNKNOWN outcome that nobody has settled. Instead of only answering
	// the repeat with the outcome-unknown payload, the callbacks ask for adk-go's tool
	// confirmation (agent.Context.RequestConfirmation), with a hint that the earlier
	// attempt may already have been applied, and the turn pauses for the answer. When
	// the user confirms, the journal's unresolved intents of the call are approved
	// (journal.Journal.Approve) and the call is sent with their idempotency key; when
	// the user declines, the call is answered with the outcome-unknown payload and the
	// intents stay for an operator (nothing is discarded). Requires Journal. Defaults
	// to false: a repeat is refused and only an operator can release it.
	//
	// Do not turn it on for mutating tools that ask for confirmation themselves
	// (functiontool's RequireConfirmation): adk-go's answer does not say which question
	// it answers, so the user confirming the tool's own prompt would also release the
	// replay without having seen the warning.
	ConfirmUnknownReplays bool

	// Admission, when set, decides about calls of the tools in QueueTools that an open
	// breaker refused: a call it queues (durably, in its journal, with an expiry) is
	// answered "queued until HH:MM, will run when the service recovers" instead of
	// "unavailable". Register its OnStateChange with the dependency map and run its Run
	// loop so that queued calls are replayed. Defaults to nil: nothing is queued.
	Admission *admission.Controller
	// QueueTools are the tools whose calls may be queued by Admission, with how long
	// each may wait. Defaults to none.
	QueueTools map[string]QueueTool
	// QueueLocation is the time zone of the HH:MM in the queued answer. Defaults to UTC.
	QueueLocation *time.Location

	// TrackDispatch says that DispatchPlugin is registered as the last plugin. Calls
	// it did not see were stopped by a plugin registered between the two and never
	// reached the dependency; their permits are released without measuring them.
	// Defaults to false: without the marker, whatever such a plugin returns is
	// classified as if the tool had returned it.
	TrackDispatch bool
}

// Bulkheads caps concurrent calls per dependency (Config.Bulkheads). The zero value
// caps nothing.
type Bulkheads struct {
	// Limits caps concurrent calls per dependency key. Defaults to none.
	Limits map[string]int
	// Default caps concurrent calls to every dependency not in Limits. Defaults to 0:
	// unlimited.
	Default int
	// SustainedRejections and SustainedWindow decide when bulkhead rejections are
	// sustained (see package bulkhead). Default to 10 within one minute.
	SustainedRejections int
	SustainedWindow     time.Duration
	// SlowCall decides when a full bulkhead's rejection counts as a failure of its
	// dependency. A saturated bulkhead is evidence that the dependency is slow only
	// when slow calls are what holds it: a rejection counts when at least half of the
	// bulkhead's slots are held by calls that have been running for SlowCall or longer.
	// Otherwise (a burst of quick calls against a healthy dependency) the call is still
	// refused with the busy payload, but the breaker does not hear of it. Defaults to
	// the dependency's breaker Policy.SlowCallThreshold when that is set, else to half
	// the tool's timeout when the tool has one (a tooltimeout.Tool), else to
	// DefaultBulkheadSlowCall. At most 1h.
	SlowCall time.Duration
}

// Observability says where the plugin's records, events and metrics go
// (Config.Observability). The zero value sends them nowhere and costs nothing.
type Observability struct {
	// Logger receives structured records with stable keys (dependency, tool,
	// request_id, outcome, error_class, status_code, elapsed_ms, breaker_state,
	// policy_version). A failed call's own text appears only as the upstream_error
	// group: its length and hash, and an excerpt only if Redaction.Redactor adds one.
	// Defaults to discarding everything.
	Logger *slog.Logger
	// OnEvent receives every event (see EventKind), on the goroutine of the call that
	// caused it and with no lock held; a panic in it is recovered and logged. Keep it
	// quick. Defaults to none.
	OnEvent func(Event)
	// Observer receives the calls for metrics and traces; pass a *telemetry.Telemetry.
	// It gets, with the call's adk-go tool context (which carries the "execute_tool"
	// span and the call's IDs): ShortCircuit for each call an open breaker answered,
	// BulkheadRejected for each call a full bulkhead refused, and CallOutcome exactly
	// once for each admitted call that reached its tool (or may have: a call released
	// without its after-callback is reported as UNKNOWN), never for a call another
	// plugin stopped before the tool or for an agentbreaker payload. Its BreakerEvent
	// comes from the dependency map and RetryBudgetExhausted from the Retrier, which
	// the telemetry's Wire reads (telemetry.Parts), except for a Retrier the plugin
	// built on SideEffects.Journal, whose refusals it reports here. It runs on the
	// call's goroutine with no lock held; a panic in it is recovered and logged.
	// Defaults to none (nil), which costs nothing.
	Observer observe.Calls
}

// withDefaults fills in defaults and checks every field.
func (cfg Config) withDefaults() (Config, error) {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "callbacks", Field: field, Value: v, Problem: problem}
	}
	if cfg.Dependencies == nil {
		return cfg, &ConfigError{Package: "callbacks", Field: "Config.Dependencies", Value: "nil", Problem: "required", Err: ErrNoDependencies}
	}
	if cfg.Name == "" {
		cfg.Name = "agentbreaker"
	}
	if cfg.Observability.Logger == nil {
		cfg.Observability.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.IdleInvocationTimeout == 0 {
		cfg.IdleInvocationTimeout = 30 * time.Minute
	}
	if cfg.IdleInvocationTimeout < time.Minute || cfg.IdleInvocationTimeout > 24*time.Hour {
		return cfg, bad("Config.IdleInvocationTimeout", cfg.IdleInvocationTimeout, "must be between 1m and 24h")
	}
	for key, c := range cfg.Classifiers {
		if c == nil {
			return cfg, bad(fmt.Sprintf("Config.Classifiers[%q]", key), "nil", "remove the entry or give a classifier")
		}
	}
	for tool, alts := range cfg.Guidance.Alternatives {
		for i, a := range alts {
			if a == "" {
				return cfg, bad(fmt.Sprintf("Config.Guidance.Alternatives[%q][%d]", tool, i), a, "tool name is empty")
			}
		}
	}
	for i, t := range cfg.SideEffects.MutatingTools {
		if t == "" {
			return cfg, bad(fmt.Sprintf("Config.SideEffects.MutatingTools[%d]", i), t, "tool name is empty")
		}
	}
	for i, t := range cfg.ExemptTools {
		if t == "" {
			return cfg, bad(fmt.Sprintf("Config.ExemptTools[%d]", i), t, "tool name is empty")
		}
	}
	for tool, qt := range cfg.SideEffects.QueueTools {
		switch {
		case tool == "":
			return cfg, bad("Config.SideEffects.QueueTools key", tool, "tool name is empty")
		case qt.MaxWait <= 0:
			return cfg, bad(fmt.Sprintf("Config.SideEffects.QueueTools[%q].MaxWait", tool), qt.MaxWait, "must be more than zero")
		}
	}
	if len(cfg.SideEffects.QueueTools) > 0 && cfg.SideEffects.Admission == nil {
		return cfg, bad("Config.SideEffects.Admission", "nil", "is required with Config.SideEffects.QueueTools: nothing could queue the calls")
	}
	if cfg.SideEffects.Journal != nil && cfg.SideEffects.Retry == nil {
		r, err := cfg.journalRetrier()
		if err != nil {
			return cfg, err
		}
		cfg.SideEffects.Retry = r
	}
	if cfg.SideEffects.ConfirmUnknownReplays && cfg.SideEffects.Journal == nil {
		return cfg, bad("Config.SideEffects.ConfirmUnknownReplays", true, "needs Config.SideEffects.Journal, which is nil: a confirmed replay must approve the journal's unresolved intents")
	}
	if cfg.Bulkheads.SlowCall < 0 || cfg.Bulkheads.SlowCall > time.Hour {
		return cfg, bad("Config.Bulkheads.SlowCall", cfg.Bulkheads.SlowCall, "must be between 0 (the default) and 1h")
	}
	if cfg.Bulkheads.Default < 0 {
		return cfg, bad("Config.Bulkheads.Default", cfg.Bulkheads.Default, "must be 0 (unlimited) or positive")
	}
	if !cfg.Guidance.DisableDocstrings {
		if cfg.Guidance.Docstring == "" {
			cfg.Guidance.Docstring = defaultDocstring
		}
		if strings.TrimSpace(cfg.Guidance.Docstring) == "" {
			return cfg, bad("Config.Guidance.Docstring", cfg.Guidance.Docstring, "is blank: leave it empty for the default or set Config.Guidance.DisableDocstrings")
		}
	}
	if err := cfg.checkText(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// Journal is what the plugin needs from the dispatch-intent journal: the argument hash
// the journal stores, the unresolved intents of one tool and arguments, approval of
// an intent, and reconciliation. *journal.Journal implements it; the interface keeps
// the plugin from depending on how (or whether) the journal is stored.
type Journal interface {
	HashArgs(args map[string]any) (hash string, canonical []byte, err error)
	Unresolved(ctx context.Context, tool, argsHash string) ([]journal.Intent, error)
	Approve(ctx context.Context, id string) error
	Reconciler() retry.Reconciler
}

var _ Journal = (*journal.Journal)(nil)

// journalRetrier builds the Retrier of a Config given a Journal and no Retry: the
// default policy, the journal's intents (when it offers them, as *journal.Journal
// does), and a hook that reports spent retry budgets to the Observer.
func (cfg Config) journalRetrier() (*retry.Retrier, error) {
	fr, ok := cfg.SideEffects.Journal.(interface{ ForRetry() retry.Journal })
	if !ok {
		return nil, &ConfigError{Package: "callbacks", Field: "Config.SideEffects.Retry", Value: "nil",
			Problem: "is required with a Config.SideEffects.Journal that has no ForRetry method: the journal is used through the Retrier"}
	}
	rc := retry.Config{Journal: fr.ForRetry(), Clock: cfg.Clock}
	if obs := cfg.Observability.Observer; obs != nil {
		rc.OnAttempt = []func(context.Context, retry.Event){func(ctx context.Context, e retry.Event) {
			if e.Stop == retry.ReasonBudgetExhausted && !e.Retry {
				obs.RetryBudgetExhausted(ctx, e.Dependency)
			}
		}}
	}
	return retry.New(rc)
}
