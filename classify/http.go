package classify

import (
	"net/http"
	"time"
)

// HTTPStatus classifies a response by its status code. header is consulted
// for Retry-After on failures and may be nil; a date in it is measured from
// now, where the zero time means [time.Now].
//
// The rules follow from one question: does the status prove the dependency
// is unwell? Capacity signals (408, 429, 5xx) count toward tripping and are
// retryable. Other 4xx answers prove the dependency is up and judging
// requests correctly (often it is the model that supplied bad arguments),
// so they are Healthy and not retryable. 503 is Failed because the server
// says it refused the work; the other 5xx are Unknown because the server
// may have applied the request before it failed.
//
// Codes 100–399 are successes. A code outside 100–599 is not a valid
// status and classifies as [ClassUnclassified].
func HTTPStatus(code int, header http.Header, now time.Time) Classification {
	var c Classification
	switch {
	case code >= 100 && code < 400:
		c = ForClass(ClassNone)
		c.StatusCode = code
		return c
	case code == http.StatusRequestTimeout:
		c = ForClass(ClassHTTP408)
	case code == http.StatusTooManyRequests:
		c = ForClass(ClassHTTP429)
	case code == http.StatusNotFound, code == http.StatusGone:
		c = ForClass(ClassNotFound)
	case code == http.StatusUnauthorized, code == http.StatusForbidden,
		code == http.StatusProxyAuthRequired:
		c = ForClass(ClassAuth)
	case code == http.StatusBadRequest, code == http.StatusUnprocessableEntity:
		c = ForClass(ClassValidation)
	case code >= 400 && code < 500:
		c = ForClass(ClassHTTP4xx)
	case code == http.StatusServiceUnavailable:
		c = of(ClassHTTP5xx, Failed)
	case code >= 500 && code < 600:
		c = ForClass(ClassHTTP5xx)
	default:
		c = ForClass(ClassUnclassified)
	}
	c.StatusCode = code
	if d, ok := retryAfterHeader(header, now); ok {
		c.RetryAfter = d
	}
	return c
}
