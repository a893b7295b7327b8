package classify

import (
	"errors"
	"net/url"
	"strings"
)

// ClassRequestConfig: the request could not be sent because of how the caller
// built it: a URL without a scheme or a host (a base URL left unset), a URL that
// does not parse, a scheme other than http or https, an invalid method or header.
// net/http refuses such a request before it opens a connection, so the dependency
// was never reached and nothing it does can fix it: FailedBeforeSend, Neutral,
// ConfigFault, not retryable. Counting it would open the dependency's breaker
// over a variable nobody set and tell the model the API is down.
//
// The evidence is structural, never text alone: a *url.Error in the chain (which
// net/http's Client.Do and http.NewRequest return) whose Op is "parse", or whose
// wrapped errors hold one of net/http's own refusals, matched exactly (see
// [RequestConfigCause]). A dependency's words in an error cannot make a failure
// neutral.
const ClassRequestConfig Class = "request_config"

// requestRefusal is one of net/http's refusals of a request it was handed, in its
// exact words, and what it means in the caller's terms.
type requestRefusal struct {
	text   string // the error's whole text, or its start when prefix is set
	prefix bool
	cause  string
}

// requestRefusals is the set of net/http errors (Go 1.26, client.go and
// transport.go) that refuse a request before any connection is made. Each is a
// plain errors.New or fmt.Errorf without %w, so it is a leaf of the chain.
var requestRefusals = []requestRefusal{
	{text: `unsupported protocol scheme ""`, cause: "the request URL has no scheme (is its base URL set?)"},
	{text: "http: no Host in request URL", cause: "the request URL has no host (is its base URL set?)"},
	{text: `unsupported protocol scheme "`, prefix: true, cause: "the request URL's scheme is not http or https"},
	{text: "http: nil Request.URL", cause: "the request has no URL"},
	{text: "http: nil Request.Header", cause: "the request has no header map"},
	{text: "http: Request.RequestURI can't be set in client requests", cause: "the request has RequestURI set, which only server requests may"},
	{text: `net/http: invalid method "`, prefix: true, cause: "the request's method is not valid"},
	{text: "net/http: invalid header ", prefix: true, cause: "a request header is not valid"},
	{text: "net/http: invalid trailer ", prefix: true, cause: "a request trailer is not valid"},
}

// causeParse is the cause of a URL that does not parse. The parser's message is
// not repeated: it quotes the URL, which may hold a key in its query.
const causeParse = "the request URL does not parse"

// RequestConfigCause reports whether err proves that a request was never sent
// because of how the caller built it ([ClassRequestConfig]), and if so says what
// is wrong in a fixed phrase (it never quotes the URL, which may carry a key).
// The proof is a *url.Error anywhere in err's chain that either has Op "parse" (a
// URL that url.Parse refused, as http.NewRequest returns it) or wraps one of these
// net/http errors, matched by their exact text:
//
//	http: no Host in request URL
//	unsupported protocol scheme "..."
//	http: nil Request.URL
//	http: nil Request.Header
//	http: Request.RequestURI can't be set in client requests
//	net/http: invalid method "..."
//	net/http: invalid header ...
//	net/http: invalid trailer ...
//
// A message flattened to text (fmt.Errorf with %v, errors.New(err.Error())) is
// not recognised: without the *url.Error it could be anyone's words. So is
// http.NewRequest's own check of the method, which returns a bare error (Client.Do
// makes the same check and wraps it).
func RequestConfigCause(err error) (cause string, ok bool) {
	anyInTree(err, func(e error) bool {
		ue, isURL := e.(*url.Error)
		if !isURL || ue == nil {
			return false
		}
		if ue.Op == "parse" {
			cause, ok = causeParse, true
			return true
		}
		anyInTree(ue.Err, func(inner error) bool {
			cause, ok = refusalCause(inner)
			return ok
		})
		return ok
	})
	return cause, ok
}

// refusalCause matches one error (not its chain) against requestRefusals.
func refusalCause(e error) (string, bool) {
	text := errorText(e)
	for _, r := range requestRefusals {
		if text == r.text || r.prefix && strings.HasPrefix(text, r.text) {
			return r.cause, true
		}
	}
	return "", false
}

// requestConfigError classifies an error RequestConfigCause recognises.
func requestConfigError(err error) (Classification, bool) {
	if _, ok := errors.AsType[*url.Error](err); !ok {
		return Classification{}, false // the common case, without walking the tree
	}
	if _, ok := RequestConfigCause(err); ok {
		return ForClass(ClassRequestConfig), true
	}
	return Classification{}, false
}
