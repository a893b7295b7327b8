package classify

// Class names the kind of failure in a few words. It is used as a metric
// label and as the reason in payloads shown to the model, so the set is
// closed: every Class this package returns is one of the constants below,
// and text from an error message never becomes a Class.
type Class string

// The classes. The comment on each gives the classification [ForClass]
// returns for it; the classifiers start from those and adjust the outcome
// where they know more (a refused dial is FailedBeforeSend, a 503 is Failed).
const (
	// ClassNone: the call succeeded. Succeeded, Healthy.
	ClassNone Class = "none"
	// ClassConnectionRefused: the remote host refused the TCP connection.
	// FailedBeforeSend, Counts, retryable.
	ClassConnectionRefused Class = "connection_refused"
	// ClassDNS: the host name could not be resolved. FailedBeforeSend,
	// Counts, retryable.
	ClassDNS Class = "dns"
	// ClassTLS: the TLS handshake failed or the peer sent a TLS alert.
	// FailedBeforeSend, Counts, retryable.
	ClassTLS Class = "tls"
	// ClassTLSConfig: the peer's certificate was rejected, or the peer does
	// not speak TLS at all. The dependency was never reached and the
	// problem is ours to fix, so FailedBeforeSend, Neutral, ConfigFault,
	// not retryable.
	ClassTLSConfig Class = "tls_config"
	// ClassConnectTimeout: establishing the connection timed out.
	// FailedBeforeSend, Counts, retryable.
	ClassConnectTimeout Class = "connect_timeout"
	// ClassTimeout: our own client-side timeout fired after the request
	// may have been sent. Unknown, Counts, retryable.
	ClassTimeout Class = "timeout"
	// ClassConnectionReset: the connection was reset or broken while the
	// request or response was in flight. Unknown, Counts, retryable.
	ClassConnectionReset Class = "connection_reset"
	// ClassTransport: some other network-level failure (unexpected EOF,
	// unreachable network). Unknown, Counts, retryable.
	ClassTransport Class = "transport"
	// ClassHTTP5xx: a 5xx response or its API equivalent (UNAVAILABLE,
	// INTERNAL). Unknown, Counts, retryable; 503 is Failed.
	ClassHTTP5xx Class = "http_5xx"
	// ClassHTTP429: the dependency is shedding load or a quota ran out.
	// Failed, Counts, retryable.
	ClassHTTP429 Class = "http_429"
	// ClassHTTP408: the server timed out waiting for the request. Failed,
	// Counts, retryable.
	ClassHTTP408 Class = "http_408"
	// ClassNotFound: 404, 410 or NOT_FOUND. Failed, Healthy.
	ClassNotFound Class = "not_found"
	// ClassHTTP4xx: any 4xx without a more specific class. Failed, Healthy.
	ClassHTTP4xx Class = "http_4xx"
	// ClassAuth: 401, 403, 407 or their API equivalents. Failed, Healthy,
	// ConfigFault: credentials need fixing, and tripping would hide that.
	ClassAuth Class = "auth"
	// ClassValidation: the dependency rejected the arguments (400, 422, or
	// an in-band validation error). Failed, Healthy.
	ClassValidation Class = "validation"
	// ClassEmptyResult: a tool reported "no results" as an error. Failed,
	// Healthy.
	ClassEmptyResult Class = "empty_result"
	// ClassCanceled: the call was cancelled by the caller or by code
	// around it. Unknown, Neutral, not retryable.
	ClassCanceled Class = "canceled"
	// ClassDeadline: the caller's own deadline ended the call. Unknown,
	// Neutral, not retryable.
	ClassDeadline Class = "deadline"
	// ClassBreakerOpen: an open circuit breaker stopped the call.
	// FailedBeforeSend, Neutral, not retryable.
	ClassBreakerOpen Class = "breaker_open"
	// ClassBulkheadFull: a full bulkhead stopped the call.
	// FailedBeforeSend, Neutral, not retryable.
	ClassBulkheadFull Class = "bulkhead_full"
	// ClassSafetyBlock: a model refused or filtered the content. Failed,
	// Healthy, not retryable.
	ClassSafetyBlock Class = "safety_block"
	// ClassInvalidArgument: a model API rejected the request
	// (INVALID_ARGUMENT, FAILED_PRECONDITION). Failed, Healthy.
	ClassInvalidArgument Class = "invalid_argument"
	// ClassRefused: the dependency answered and declined the request: a
	// business refusal (a card declined, an order that can no longer be
	// cancelled), an MCP tool's isError result, or a failure reported in a
	// result map, none of them naming an outage or a shortage of capacity.
	// The dependency works, so Failed, Healthy, not retryable; its answer is
	// for the model to act on.
	ClassRefused Class = "refused"
	// ClassUnclassified: an error nothing else matched. Unknown, Counts,
	// retryable.
	ClassUnclassified Class = "unclassified"
)

// classTable holds the default classification of every class, in the order
// Classes reports them.
var classTable = []Classification{
	{Class: ClassNone, Outcome: Succeeded, Verdict: Healthy},
	{Class: ClassConnectionRefused, Outcome: FailedBeforeSend, Verdict: Counts, Retryable: true},
	{Class: ClassDNS, Outcome: FailedBeforeSend, Verdict: Counts, Retryable: true},
	{Class: ClassTLS, Outcome: FailedBeforeSend, Verdict: Counts, Retryable: true},
	{Class: ClassTLSConfig, Outcome: FailedBeforeSend, Verdict: Neutral, ConfigFault: true},
	{Class: ClassRequestConfig, Outcome: FailedBeforeSend, Verdict: Neutral, ConfigFault: true},
	{Class: ClassConnectTimeout, Outcome: FailedBeforeSend, Verdict: Counts, Retryable: true},
	{Class: ClassTimeout, Outcome: Unknown, Verdict: Counts, Retryable: true},
	{Class: ClassConnectionReset, Outcome: Unknown, Verdict: Counts, Retryable: true},
	{Class: ClassTransport, Outcome: Unknown, Verdict: Counts, Retryable: true},
	{Class: ClassHTTP5xx, Outcome: Unknown, Verdict: Counts, Retryable: true},
	{Class: ClassHTTP429, Outcome: Failed, Verdict: Counts, Retryable: true},
	{Class: ClassHTTP408, Outcome: Failed, Verdict: Counts, Retryable: true},
	{Class: ClassNotFound, Outcome: Failed, Verdict: Healthy},
	{Class: ClassHTTP4xx, Outcome: Failed, Verdict: Healthy},
	{Class: ClassAuth, Outcome: Failed, Verdict: Healthy, ConfigFault: true},
	{Class: ClassValidation, Outcome: Failed, Verdict: Healthy},
	{Class: ClassEmptyResult, Outcome: Failed, Verdict: Healthy},
	{Class: ClassCanceled, Outcome: Unknown, Verdict: Neutral},
	{Class: ClassDeadline, Outcome: Unknown, Verdict: Neutral},
	{Class: ClassBreakerOpen, Outcome: FailedBeforeSend, Verdict: Neutral},
	{Class: ClassBulkheadFull, Outcome: FailedBeforeSend, Verdict: Neutral},
	{Class: ClassSafetyBlock, Outcome: Failed, Verdict: Healthy},
	{Class: ClassInvalidArgument, Outcome: Failed, Verdict: Healthy},
	{Class: ClassRefused, Outcome: Failed, Verdict: Healthy},
	{Class: ClassUnclassified, Outcome: Unknown, Verdict: Counts, Retryable: true},
}

// classIndex maps a class to its position in classTable.
var classIndex = func() map[Class]int {
	m := make(map[Class]int, len(classTable))
	for i, c := range classTable {
		m[c.Class] = i
	}
	return m
}()

// Classes returns every class in a fixed order. Telemetry can use it to
// create all label values up front, so a counter exists at zero before the
// first failure of its kind. The caller owns the returned slice.
func Classes() []Class {
	out := make([]Class, len(classTable))
	for i, c := range classTable {
		out[i] = c.Class
	}
	return out
}

// Known reports whether c is one of the package's class constants. Input
// that names a class (a payload's error_class, a user rule's result) is
// checked with it before it can reach a metric label.
func (c Class) Known() bool {
	_, ok := classIndex[c]
	return ok
}

// String returns the class as a plain string.
func (c Class) String() string { return string(c) }

// ForClass returns the default classification of a class, as listed on the
// class constants, with no status code or retry delay. It is meant for
// writing [Rule]s: start from ForClass and change what differs. An unknown
// class gives the classification of [ClassUnclassified].
func ForClass(c Class) Classification {
	if i, ok := classIndex[c]; ok {
		return classTable[i]
	}
	return classTable[classIndex[ClassUnclassified]]
}
