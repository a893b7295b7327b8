package payloads

import (
	"strconv"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
)

// Response types of the payloads. Each starts with classify.PayloadPrefix, so
// classify.ToolResult (and any agentbreaker callback) recognises the map as ours and
// never records it as a call to the dependency.
const (
	TypeUnavailable     = classify.PayloadPrefix + "unavailable"
	TypeBusy            = classify.PayloadPrefix + "busy"
	TypeBudgetExhausted = classify.PayloadPrefix + "budget_exhausted"
	TypeOutcomeUnknown  = classify.PayloadPrefix + "outcome_unknown"
)

// Status values the model reads. The tool docstring sentence (package docstrings)
// tells the model what to do when it sees StatusUnavailable.
const (
	StatusUnavailable    = "unavailable"
	StatusOutcomeUnknown = "outcome_unknown"
)

// Keys of the payload maps.
const (
	KeyResponseType      = "response_type"
	KeyStatus            = "status"
	KeyDependency        = "dependency"
	KeyTool              = "tool"
	KeyErrorClass        = "error_class"
	KeyReason            = "reason"
	KeyInstruction       = "instruction"
	KeyRetryAdvised      = "retry_advised"
	KeyRetryAfterSeconds = "retry_after_seconds"
	KeyFirm              = "firm"
	KeyCachedResult      = "cached_result"
	KeyCachedAgeSeconds  = "cached_age_seconds"
	keyCachedAsOf        = "cached_as_of"
	keyPartialResult     = "partial_result"
	keyAlternatives      = "alternatives"
)

// Info is what a payload may say. It has no field for upstream text on purpose: the
// reason is composed from Class alone, so nothing an upstream service wrote (error
// bodies, messages, headers) can reach the model through a payload.
type Info struct {
	// Dependency is the dependency key. Required; control characters and anything
	// outside a conservative character set are replaced, and it is cut at 64 bytes.
	Dependency string
	// Tool is the tool the model called, cleaned like Dependency. Optional.
	Tool string
	// Class is the kind of failure behind the payload, for the reason and the
	// error_class field. An unknown or empty class gives each payload's default
	// (breaker_open, bulkhead_full, unclassified).
	Class classify.Class
	// RetryAfter is how long until the dependency may be tried again; it becomes
	// retry_after_seconds, rounded up. Zero or negative means nobody knows when (a
	// breaker waiting for its probe, one forced open): the payload then has no
	// retry_after_seconds at all, rather than a 0 that would read as "now". An
	// OutcomeUnknown payload never has one: its action must not be repeated.
	RetryAfter time.Duration
	// Firm marks the loop guard's firm message: the model has already been told, and
	// must now answer without the tool.
	Firm bool
	// ShortCircuits is how many calls to this dependency were already short-circuited
	// in this invocation, quoted by the firm message. Optional.
	ShortCircuits int
	// Cached is a last-good answer to offer, with its age. Optional.
	Cached *Cached
	// Partial is a partial result to offer (any JSON-like value). Optional.
	Partial any
	// Alternatives names other tools that can do the job. Optional; names are cleaned
	// like Dependency and at most 10 are kept.
	Alternatives []string
	// Shed is the share of the dependency's calls its throttle is holding back, from 0
	// to 1, read when the call was shed; only Shed uses it. Its reason, shed_percent
	// and retry_advised follow it: "most calls to it are still sent" only while less
	// than half is shed. Zero means not known (the payload then claims no share).
	Shed float64
}

// Unavailable is the open-breaker payload: the dependency is failing and calls to it
// are paused.
func Unavailable(in Info) map[string]any {
	class := defaultClass(in.Class, classify.ClassBreakerOpen)
	reason := cleanName(in.Dependency) + " is temporarily unavailable: " + phrase(class) + "."
	return build(TypeUnavailable, StatusUnavailable, class, reason, in)
}

// Busy is the bulkhead payload: too many calls to the dependency are in progress.
func Busy(in Info) map[string]any {
	class := defaultClass(in.Class, classify.ClassBulkheadFull)
	reason := cleanName(in.Dependency) + " is too busy to take another request right now: " + phrase(class) + "."
	return build(TypeBusy, StatusUnavailable, class, reason, in)
}

// BudgetExhausted is the payload for a dependency whose retry budget is used up; Class
// is the failure that used it.
func BudgetExhausted(in Info) map[string]any {
	class := defaultClass(in.Class, classify.ClassUnclassified)
	reason := "the retry budget for " + cleanName(in.Dependency) + " is used up: " + phrase(class) + "."
	return build(TypeBudgetExhausted, StatusUnavailable, class, reason, in)
}

// OutcomeUnknown is the payload for a mutation whose request may have been applied
// (a timeout after sending, a reset, most 5xx): the model must not repeat it.
func OutcomeUnknown(in Info) map[string]any {
	class := defaultClass(in.Class, classify.ClassUnclassified)
	reason := "it is not known whether " + cleanName(in.Dependency) + " carried out the request: " + phrase(class) + "."
	in.Firm = false
	return build(TypeOutcomeUnknown, StatusOutcomeUnknown, class, reason, in)
}

// Is reports whether result is one of this library's payloads.
func Is(result map[string]any) bool {
	rt, _ := result[KeyResponseType].(string)
	return strings.HasPrefix(rt, classify.PayloadPrefix)
}

func defaultClass(c, def classify.Class) classify.Class {
	if !c.Known() || c == classify.ClassNone {
		return def
	}
	return c
}

func build(kind, status string, class classify.Class, reason string, in Info) map[string]any {
	m := map[string]any{
		KeyResponseType: kind,
		KeyStatus:       status,
		KeyDependency:   cleanName(in.Dependency),
		KeyErrorClass:   string(class),
		KeyRetryAdvised: false,
	}
	if in.Tool != "" {
		m[KeyTool] = cleanName(in.Tool)
	}
	if s := seconds(in.RetryAfter); s > 0 && kind != TypeOutcomeUnknown {
		m[KeyRetryAfterSeconds] = s
		reason += " It may be tried again in about " + humanDuration(time.Duration(s)*time.Second) + "."
	}
	if c := in.Cached; c != nil && c.Result != nil {
		m[KeyCachedResult] = c.Result
		m[KeyCachedAgeSeconds] = seconds(c.Age)
		if !c.StoredAt.IsZero() {
			m[keyCachedAsOf] = c.StoredAt.UTC().Format(time.RFC3339)
		}
		reason += " A cached answer from " + humanDuration(c.Age) + " ago is included."
	}
	if in.Partial != nil {
		m[keyPartialResult] = in.Partial
		reason += " A partial result is included."
	}
	if alts := cleanNames(in.Alternatives); len(alts) > 0 {
		m[keyAlternatives] = alts
		reason += " Other tools that may help: " + strings.Join(alts, ", ") + "."
	}
	if in.Firm {
		m[KeyFirm] = true
	}
	m[KeyReason] = reason
	m[KeyInstruction] = instruction(kind, in)
	return m
}

func instruction(kind string, in Info) string {
	switch {
	case kind == TypeOutcomeUnknown:
		return "Do not repeat this action. Tell the user it could not be confirmed whether it was done."
	case kind == TypeFailed && in.Cached != nil && in.Cached.Result != nil:
		return "Do not repeat this request now. Answer with the cached result, telling the user how old it is."
	case kind == TypeFailed:
		return "Do not repeat this request now. Tell the user this information could not be retrieved and continue without it."
	case in.Firm:
		s := "Stop calling this tool in this turn"
		if in.ShortCircuits > 1 {
			s = "This tool has been unavailable " + strconv.Itoa(in.ShortCircuits) + " times in this turn. Stop calling it"
		}
		return s + " and answer the user now without it, saying that this information is unavailable."
	case in.Cached != nil && in.Cached.Result != nil:
		return "Do not call this tool again now. Answer with the cached result, telling the user how old it is."
	}
	return "Do not call this tool again now. Tell the user this information is unavailable at the moment and continue without it."
}

// seconds rounds d up to whole seconds, never below zero.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// humanDuration says d in words a model repeats well: "45 seconds", "20 minutes",
// "3 hours".
func humanDuration(d time.Duration) string {
	unit := func(n int64, word string) string {
		if n == 1 {
			return "1 " + word
		}
		return strconv.FormatInt(n, 10) + " " + word + "s"
	}
	switch {
	case d < 90*time.Second:
		return unit(max(seconds(d), 0), "second")
	case d < 90*time.Minute:
		return unit(int64((d+30*time.Second)/time.Minute), "minute")
	case d < 48*time.Hour:
		return unit(int64((d+30*time.Minute)/time.Hour), "hour")
	}
	return unit(int64((d+12*time.Hour)/(24*time.Hour)), "day")
}
