// Package classify decides what one finished tool or model call means for
// a circuit breaker, and for whoever might retry it.
//
// "Anything that returned an error" is the wrong definition of failure in
// both directions. An agent's model invents tool arguments and gets some of
// them wrong, so a 404 or a validation error says the dependency is
// working, and counting it would let one confused model trip a breaker that
// every other user needs. Meanwhile a tool that returns
// {"status": "error"} without a Go error has failed, and a call the
// caller cancelled tells us nothing about the dependency at all.
//
// For each call the package returns a [Classification] with five answers:
//
//   - Outcome: did the request reach the dependency, and might it have been
//     applied? [Succeeded], [FailedBeforeSend] (safe to replay),
//     [Failed] (a definitive refusal) or [Unknown] (it may have happened;
//     replay a mutation only with an idempotency key).
//   - Class: a short name from a closed set, safe as a metric label.
//   - Verdict: what the breaker records. [Healthy] is a success, [Counts] a
//     failure toward tripping, [Neutral] nothing at all. A business refusal
//     (the dependency answered and declined) is Healthy, a success in the
//     window, not Neutral: the dependency is working.
//   - Retryable, ConfigFault and RetryAfter: whether waiting could help,
//     whether a person must fix our configuration instead, and how long the
//     server asked us to wait.
//
// # Default rules
//
// The first matching row decides.
//
//	evidence                                    outcome             class                verdict  retry
//	caller's context done, call not a success   kept or UNKNOWN (1) canceled, deadline   neutral  no
//	LocalRejection (open breaker, bulkhead)     FAILED_BEFORE_SEND  breaker_open, ...    neutral  no
//	*ToolError (StatusError, NotFound, ...)     as the constructor says (see ToolError)
//	genai.APIError                              by status name, else by code (see below)
//	request refused by net/http (URL without    FAILED_BEFORE_SEND  request_config (2)   neutral  no
//	  host or scheme, unparsable URL, ...)
//	certificate errors, peer not speaking TLS   FAILED_BEFORE_SEND  tls_config (2)       neutral  no
//	TLS alert or handshake failure              FAILED_BEFORE_SEND  tls                  counts   yes
//	dial: connection refused                    FAILED_BEFORE_SEND  connection_refused   counts   yes
//	dial: DNS lookup failed                     FAILED_BEFORE_SEND  dns                  counts   yes
//	dial: timed out                             FAILED_BEFORE_SEND  connect_timeout      counts   yes
//	dial: anything else                         FAILED_BEFORE_SEND  transport            counts   yes
//	our own timeout (deadline, net timeout)     UNKNOWN             timeout              counts   yes
//	context.Canceled, caller not done           UNKNOWN             canceled             neutral  no
//	ECONNRESET, EPIPE, ECONNABORTED             UNKNOWN             connection_reset     counts   yes
//	EOF, unexpected EOF, other network errors   UNKNOWN             transport            counts   yes
//	any other error (3)                         UNKNOWN             unclassified         counts   yes
//	status 100-399, no in-band failure          SUCCEEDED           none                 healthy  -
//	status 408                                  FAILED              http_408             counts   yes
//	status 429                                  FAILED              http_429             counts   yes
//	status 503                                  FAILED              http_5xx             counts   yes
//	other 5xx                                   UNKNOWN             http_5xx             counts   yes
//	status 404, 410                             FAILED              not_found            healthy  no
//	status 401, 403, 407                        FAILED              auth (2)             healthy  no
//	status 400, 422                             FAILED              validation           healthy  no
//	other 4xx                                   FAILED              http_4xx             healthy  no
//	tool result reporting failure in-band       see ToolResult; no outage named: refused, FAILED, healthy, no retry
//	MCP isError result (adk-go's error text)    see MCPIsError; no outage named: refused, FAILED, healthy, no retry
//
// Notes on the table:
//  1. FAILED_BEFORE_SEND or FAILED is kept when the evidence proves it.
//  2. ConfigFault is set.
//  3. An error no rule recognises gives way to a failing status code or an
//     in-band failure that came with it, or to the status the error itself
//     carries: an [HTTPStatusError], or a Stainless SDK's API error (openai-go's
//     *openai.Error) read by its shape, with its Retry-After-Ms or Retry-After.
//
// For a [genai.APIError] the status name wins over the code:
// RESOURCE_EXHAUSTED is http_429 and UNAVAILABLE is a Failed http_5xx, both
// with RetryAfter from a google.rpc.RetryInfo detail; DEADLINE_EXCEEDED (and
// a bare 504) is timeout; INVALID_ARGUMENT, FAILED_PRECONDITION and
// OUT_OF_RANGE are invalid_argument (healthy); PERMISSION_DENIED and
// UNAUTHENTICATED are auth; NOT_FOUND is not_found; INTERNAL, UNKNOWN and
// DATA_LOSS are an Unknown http_5xx.
//
// Errors are matched with errors.Is and errors.As, so wrapping in url.Error
// or with fmt.Errorf("...: %w", err) changes nothing. Retry-After headers
// are honoured on any failure; RetryInfo details win over them.
//
// # What a tool can say, and what is not read
//
// A tool tells the classifier what its dependency did in one of these forms, and only
// these:
//
//   - a Go error built with [StatusError], [NotFound], [InvalidInput] or
//     [UpstreamFailure], returned as is or wrapped with %w anywhere in the chain;
//   - an error from the httptransport package (its classification travels with it),
//     a [genai.APIError], an error carrying its HTTP status ([HTTPStatusError], or
//     openai-go's *openai.Error), or the network and context errors in the table above;
//   - Input.StatusCode, when the caller has the HTTP response;
//   - a result map reporting failure in-band, read by [ToolResult]: a numeric
//     "status_code" (or "statusCode", "http_status", or "code"/"status" inside a failing
//     result), or a whole-word failure name such as "not_found", "NOT_FOUND",
//     "Not Found" or "invalid_argument" as the entire value of "error_class",
//     "error_type", "reason", "code", "status" or "error".
//
// A Go error's text is not searched for status codes or failure names: a Go error
// "HTTP 404" or "customer not found" is unclassified (UNKNOWN, counts), because the
// text may be a transport's and a sentence is not a name. Return NotFound instead.
// The words of a dependency's answer are read, but only for an outage signal written
// as a name or a status ([TextSignal]): an MCP isError result and an in-band failure
// are the dependency answering, [ClassRefused] (FAILED, healthy) unless they say
// "HTTP 503", UNAVAILABLE, RESOURCE_EXHAUSTED or the like. A declined card never
// trips a breaker; [MatchText] teaches a classifier a server's own words for an
// outage.
//
// # Customising
//
// Dependencies have quirks. [New] builds a [Classifier] that tries its own
// rules (see [Rule]) before the defaults; [ForClass], [MatchError] and
// [MatchStatus] help write them. [FinishReason] covers model responses that
// arrive without an error but were filtered.
//
// # Concurrency
//
// Every function in the package is safe for concurrent use; a Classifier is
// immutable once built. Nothing here blocks or does I/O.
package classify
