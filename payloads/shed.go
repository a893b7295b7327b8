package payloads

import "github.com/agentbreaker/agentbreaker/classify"

// TypeShed is the response type of [Shed].
const TypeShed = classify.PayloadPrefix + "shed"

// StatusOverloaded is the status of [Shed]: the dependency is up but cannot take all
// it gets, and this call was one of the share held back.
const StatusOverloaded = "overloaded"

// KeyCallSent says whether the call reached the dependency: false in [Shed].
const KeyCallSent = "call_sent"

// Shed is the payload for a call the throttle held back while its dependency is partly
// overloaded: most calls still go through, this one was not sent, and nothing can have
// been done. Class is the failure the dependency has been answering with (429, 503, …)
// and defaults to http_429. A retry is advised later unless the loop guard turned firm;
// RetryAfter, when the dependency stated a delay, says how much later.
func Shed(in Info) map[string]any {
	class := defaultClass(in.Class, classify.ClassHTTP429)
	reason := cleanName(in.Dependency) + " is partly overloaded (" + phrase(class) + "), so this call was not sent: " +
		"only a share of calls is being let through."
	m := build(TypeShed, StatusOverloaded, class, reason, in)
	m[KeyCallSent] = false
	m[KeyRetryAdvised] = !in.Firm
	switch {
	case in.Firm:
		// build's firm instruction: stop calling it in this turn.
	case in.Cached != nil && in.Cached.Result != nil:
		m[KeyInstruction] = "Do not repeat this call right away. Answer with the cached result, telling the user how old it is; a later request may get fresh data."
	case seconds(in.RetryAfter) > 0:
		m[KeyInstruction] = "Do not repeat this call before the time given. Continue without this information for now, or call the tool once more after that."
	default:
		m[KeyInstruction] = "Do not repeat this call right away. Continue without this information, or try once more later in the conversation; most calls to it still succeed."
	}
	return m
}
