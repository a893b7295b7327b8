// Package payloads writes the results agentbreaker hands to the model in place of a
// real tool result: when a breaker is open, a bulkhead is full, a retry budget is used
// up, a mutation's outcome is unknown, or a call reached its dependency and failed
// ([Failed], in place of the error text or in-band error the dependency wrote).
//
// A payload is a prompt, not an error code. It says plainly that the tool is
// unavailable, that retrying now is not advised and when it might be, and offers what
// there is instead: a cached answer with its age, a partial result, or the names of
// other tools. Every map carries a "response_type" starting with
// classify.PayloadPrefix and an "error_class" from the classify package, so callbacks
// recognise their own payloads and never count them as calls to the dependency.
//
// Upstream text never reaches a payload. Error bodies are untrusted: they can hold
// prompt injections, secrets or terminal escapes. The reason is composed from the
// failure class alone; the raw text belongs in logs.
//
// The maps are built fresh on every call and are safe to hand to adk-go, which may
// serialise them. [Cache] keeps last-good answers per tool and arguments for the
// "as of N minutes ago" answer.
package payloads
