package payloads

import "github.com/agentbreaker/agentbreaker/classify"

// TypeFailed is the response type of [Failed].
const TypeFailed = classify.PayloadPrefix + "failed"

// StatusError is the status of [Failed]: this call did not work, whatever the
// breaker's state.
const StatusError = "error"

// failedPhrases say, for the failures that are usually the caller's own mistake, what
// went wrong with this one request, in words the model can act on.
var failedPhrases = map[classify.Class]string{
	classify.ClassValidation:      "it rejected the arguments of this request as invalid",
	classify.ClassInvalidArgument: "it rejected the arguments of this request as invalid",
	classify.ClassNotFound:        "it has nothing matching this request",
	classify.ClassEmptyResult:     "it found no results for this request",
	classify.ClassHTTP4xx:         "it refused this request",
	classify.ClassSafetyBlock:     "it refused this request for safety reasons",
	classify.ClassRequestConfig:   "the request was never sent because this agent's settings for it are missing or invalid",
}

// Failed is the payload for one call that reached the dependency and failed, given to
// the model in place of the error text or in-band error result the tool returned
// (which the dependency wrote and may hold prompt injections or secrets). Like every
// payload its reason is composed from Class and configured names only; RetryAfter,
// Cached and Partial add what they add to the other payloads.
func Failed(in Info) map[string]any {
	class := defaultClass(in.Class, classify.ClassUnclassified)
	p, ok := failedPhrases[class]
	if !ok {
		p = phrase(class)
	}
	reason := "this request to " + cleanName(in.Dependency) + " failed: " + p + "."
	in.Firm = false
	return build(TypeFailed, StatusError, class, reason, in)
}
