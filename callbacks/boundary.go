package callbacks

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/configerr"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/redact"
)

// ErrorText says what of a failed call's own text (the tool's error message, or the
// error fields of a result that reports failure in-band) the model may see. The text
// is written by the dependency, or by a tool that copied the dependency's answer into
// its error: it can hold prompt injections, secrets, markup and terminal escapes.
//
// The rule, for every guarded call that reached its tool and failed: when the
// dependency answered, the model gets its answer; when it failed, the model gets only
// agentbreaker's payload. In detail:
//
//   - The dependency answered and works (a FAILED outcome with a healthy verdict: a
//     refusal such as a declined card, an MCP isError result without an outage signal,
//     a 4xx such as classify.StatusError(402, ...), a validation message, not found, no
//     results): the tool's message reaches the model so that it can tell the user or
//     correct its arguments, passed through redact.Answer: at most 512 bytes per
//     string, control and format characters and invalid UTF-8 removed, known secret
//     shapes (keys, passwords in URLs, card numbers) masked. Such answers never count
//     against the breaker. Prompt injections in them pass: set ErrorTextWithheld for
//     a tool whose answers the model must not read.
//   - The dependency failed (5xx, 429, timeouts, transport errors, crashes and stack
//     traces, unclassified errors) or our configuration did (auth, TLS): the model
//     gets agentbreaker's payload (payloads.Failed, response_type
//     "agentbreaker.failed"), built from the class: status, a reason from fixed text,
//     retry advice, and the cached answer or partial result you configured
//     (Config.Guidance.Cache, Config.Guidance.Fallback).
//
// The answer is given by agentbreaker's after-tool callback, so every on-error callback
// (other plugins', the agent's) still sees the error first; as with any plugin that
// answers in adk-go, the agent's own after-tool callbacks are then skipped for that
// call. A plugin after agentbreaker that answers the error itself (adk-go's
// retry-and-reflect) keeps its answer, with the error's text replaced by a note naming
// the class.
//
// Failures that never reached the tool (an open breaker, a full bulkhead, a spent
// retry budget) already get their payloads. Exempt tools (Config.ExemptTools,
// built-ins, tools the dependency map exempts) are not guarded and are not changed.
type ErrorText uint8

const (
	// ErrorTextRedact is the default: dependency failures become the payload, the
	// dependency's answers keep a bounded, cleaned message.
	ErrorTextRedact ErrorText = iota
	// ErrorTextBounded adds to the payload of a dependency failure a "tool_message"
	// with a bounded excerpt of the text (redact.Excerpt: 512 bytes, cleaned, common
	// secret shapes masked). Masking is best effort: prompt injections pass.
	ErrorTextBounded
	// ErrorTextVerbatim leaves the tool's result or error as adk-go passes it:
	// {"error": err.Error()} for an error. Only for tools whose errors you write
	// yourself and never copy from a dependency.
	ErrorTextVerbatim
	// ErrorTextWithheld withholds the dependency's answers too: every failure,
	// refusals and validation messages included, reaches the model only as
	// agentbreaker's payload. For a dependency whose answers may carry what the
	// model must not read (another customer's data in a refusal).
	ErrorTextWithheld
)

var errorTextNames = [...]string{ErrorTextRedact: "redact", ErrorTextBounded: "bounded", ErrorTextVerbatim: "verbatim", ErrorTextWithheld: "withheld"}

func (p ErrorText) String() string {
	if int(p) < len(errorTextNames) {
		return errorTextNames[p]
	}
	return fmt.Sprintf("ErrorText(%d)", uint8(p))
}

// Redaction decides what of a dependency's text reaches the model and the operator.
// The zero value is the safe default.
type Redaction struct {
	// ErrorText sets, per tool name, what of a failed call's text the model sees.
	// Defaults to ErrorTextRedact for every tool; see ErrorText for the rule.
	ErrorText map[string]ErrorText
	// Redactor decides what of the text reaches log records (the upstream_error
	// group) and Events (Event.Upstream): a fingerprint (length and short hash) by
	// default, an excerpt only if it was built with redact.Config.Excerpt. Defaults
	// to redact.Default: fingerprints only.
	Redactor *redact.Redactor
}

// checkText refuses tool names that are not valid UTF-8, hold control characters or
// are absurdly long (redact.CheckName): they would reach metric labels, log lines and
// payloads. It fills in the Redaction's defaults.
func (cfg *Config) checkText() error {
	for i, t := range cfg.SideEffects.MutatingTools {
		if err := redact.CheckName(fmt.Sprintf("Config.SideEffects.MutatingTools[%d]", i), t); err != nil {
			return configerr.Relabel(err, "callbacks", "", "")
		}
	}
	for i, t := range cfg.ExemptTools {
		if err := redact.CheckName(fmt.Sprintf("Config.ExemptTools[%d]", i), t); err != nil {
			return configerr.Relabel(err, "callbacks", "", "")
		}
	}
	for tool, alts := range cfg.Guidance.Alternatives {
		if err := redact.CheckName("Config.Guidance.Alternatives key", tool); err != nil {
			return configerr.Relabel(err, "callbacks", "", "")
		}
		for i, a := range alts {
			if err := redact.CheckName(fmt.Sprintf("Config.Guidance.Alternatives[%q][%d]", tool, i), a); err != nil {
				return configerr.Relabel(err, "callbacks", "", "")
			}
		}
	}
	for tool := range cfg.SideEffects.QueueTools {
		if err := redact.CheckName("Config.SideEffects.QueueTools key", tool); err != nil {
			return configerr.Relabel(err, "callbacks", "", "")
		}
	}
	return cfg.Guidance.Redaction.check()
}

// check validates r and fills in its defaults.
func (r *Redaction) check() error {
	for tool, p := range r.ErrorText {
		if err := redact.CheckName("Config.Guidance.Redaction.ErrorText key", tool); err != nil {
			return configerr.Relabel(err, "callbacks", "", "")
		}
		if p > ErrorTextWithheld {
			return &ConfigError{Package: "callbacks", Field: fmt.Sprintf("Config.Guidance.Redaction.ErrorText[%q]", tool), Value: p,
				Problem: "must be ErrorTextRedact, ErrorTextBounded, ErrorTextVerbatim or ErrorTextWithheld"}
		}
	}
	if r.Redactor == nil {
		r.Redactor = redact.Default
	}
	return nil
}

// maxModelText bounds each string of the tool's own text that the model may see.
const maxModelText = 512

// keyToolMessage holds the bounded excerpt of ErrorTextBounded.
const keyToolMessage = "tool_message"

// dependencyAnswered reports whether cls says that the dependency answered the call
// and works: a FAILED outcome with a healthy verdict that is not our configuration's
// fault. Its words are then an answer for the model, not an outage's debris.
func dependencyAnswered(cls classify.Classification) bool {
	return cls.Outcome == classify.Failed && cls.Verdict == classify.Healthy && !cls.ConfigFault
}

// boundaryInput is what the after-tool callback knows about a finished call.
type boundaryInput struct {
	cl      *call
	args    map[string]any
	cls     classify.Classification
	sent    bool           // the call reached its tool
	result  map[string]any // what adk-go would hand on
	toolErr error          // what adk-go would hand on
	errText string         // the error text recorded by our on-error callback, if any
}

// answer returns what the model gets instead of what adk-go would hand on, or nil to
// hand it on unchanged. It is the one place where a failed call's text meets the model.
func (c *Callbacks) answer(ctx agent.Context, in boundaryInput) map[string]any {
	policy := c.cfg.Guidance.Redaction.ErrorText[in.cl.tool]
	if policy == ErrorTextVerbatim || !in.sent {
		return nil
	}
	switch {
	case in.toolErr != nil:
		// An error nobody answered: adk-go would send {"error": err.Error()}.
	case in.result == nil:
		return nil
	case payloads.Is(in.result):
		return nil // agentbreaker's own payload: built from the class already
	case in.errText != "":
		// A plugin after ours answered the error (retry-and-reflect quotes it): keep
		// its answer, without the dependency's words.
		return withheld(in.result, in.errText, in.cls.Class)
	case isReflectAndRetry(in.result):
		// A plugin ahead of ours answered: the error's text is in its answer.
		if s, _ := in.result["error_details"].(string); s != "" {
			return withheld(in.result, s, classify.ClassUnclassified)
		}
		return nil
	case in.cls.Class == classify.ClassNone:
		return nil // a success: the data is what the model asked for
	}
	if dependencyAnswered(in.cls) && policy != ErrorTextWithheld {
		if in.toolErr != nil {
			return map[string]any{"error": modelText(in.toolErr.Error())}
		}
		return boundedResult(in.result)
	}
	info := c.payloadInfo(ctx, in.cl.tool, in.cl.dep, in.args)
	// The call may just have opened its breaker: then the wait is the cooldown's, not
	// the zero of a failure that stated no delay.
	info.Class, info.RetryAfter = in.cls.Class, max(statedDelay(in.cl.breaker, in.cls.RetryAfter), in.cl.breaker.RetryAfter())
	p := payloads.Failed(info)
	if policy == ErrorTextBounded {
		text := inBandText(in.result)
		if in.toolErr != nil {
			text = in.toolErr.Error()
		}
		if s := redact.Excerpt(text, maxModelText); s != "" {
			p[keyToolMessage] = s
		}
	}
	return p
}

// withheld returns a copy of m in which every occurrence of text is replaced by a
// note naming the class.
func withheld(m map[string]any, text string, class classify.Class) map[string]any {
	note := "[" + string(class) + " error: its text is withheld by agentbreaker]"
	out, _ := mapStrings(m, func(s string) string { return strings.ReplaceAll(s, text, note) }, 0).(map[string]any)
	return out
}

// boundedResult returns a copy of a result that carries the dependency's answer, with
// every string cleaned, masked and bounded.
func boundedResult(m map[string]any) map[string]any {
	out, _ := mapStrings(m, modelText, 0).(map[string]any)
	return out
}

// modelText is a string of the dependency's answer as the model may read it.
func modelText(s string) string { return redact.Answer(s, maxModelText) }

// maxDepth bounds how deep mapStrings copies; deeper values are dropped.
const maxDepth = 8

// mapStrings copies v, applying f to every string in it (map keys included).
func mapStrings(v any, f func(string) string, depth int) any {
	if depth > maxDepth {
		return nil
	}
	switch x := v.(type) {
	case string:
		return f(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[f(k)] = mapStrings(e, f, depth+1)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = mapStrings(e, f, depth+1)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = f(e)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			out[f(k)] = f(e)
		}
		return out
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return x
	}
	// Anything else (a struct, an error) is flattened by adk-go's JSON encoding into
	// text we cannot see: say what it was instead.
	return fmt.Sprintf("[%T withheld by agentbreaker]", v)
}

// upstreamAttr is the log attribute for a dependency's text: its fingerprint, and an
// excerpt only if the Redactor adds them.
func (c *Callbacks) upstreamAttr(text string) slog.Attr {
	return c.cfg.Guidance.Redaction.Redactor.Attr("upstream_error", text)
}

// errAttr is the log attribute for an error that may carry a dependency's text.
func (c *Callbacks) errAttr(err error) slog.Attr {
	return c.cfg.Guidance.Redaction.Redactor.ErrorAttr("error", err)
}

// statedDelay is the delay a dependency stated, as the model is told it: capped by the
// policy's MaxRetryAfter, like the hold that enforces it, so that the answer and the
// calls let through later agree.
func statedDelay(b *breaker.Breaker, d time.Duration) time.Duration {
	if b != nil {
		d = min(d, b.Policy().MaxRetryAfter)
	}
	return d
}
