package classify

import (
	"net/http"
	"strings"
	"time"

	"google.golang.org/genai"
)

// apiStatus maps the canonical status names Google APIs put in
// genai.APIError.Status to a classification and the usual HTTP code.
// Names not listed here fall back to the numeric code.
var apiStatus = map[string]struct {
	c    Classification
	code int
}{
	"RESOURCE_EXHAUSTED":  {ForClass(ClassHTTP429), http.StatusTooManyRequests},
	"UNAVAILABLE":         {of(ClassHTTP5xx, Failed), http.StatusServiceUnavailable},
	"DEADLINE_EXCEEDED":   {ForClass(ClassTimeout), http.StatusGatewayTimeout},
	"INVALID_ARGUMENT":    {ForClass(ClassInvalidArgument), http.StatusBadRequest},
	"FAILED_PRECONDITION": {ForClass(ClassInvalidArgument), http.StatusBadRequest},
	"OUT_OF_RANGE":        {ForClass(ClassInvalidArgument), http.StatusBadRequest},
	"PERMISSION_DENIED":   {ForClass(ClassAuth), http.StatusForbidden},
	"UNAUTHENTICATED":     {ForClass(ClassAuth), http.StatusUnauthorized},
	"NOT_FOUND":           {ForClass(ClassNotFound), http.StatusNotFound},
	"INTERNAL":            {ForClass(ClassHTTP5xx), http.StatusInternalServerError},
	"UNKNOWN":             {ForClass(ClassHTTP5xx), http.StatusInternalServerError},
	"DATA_LOSS":           {ForClass(ClassHTTP5xx), http.StatusInternalServerError},
}

// apiError classifies an error from the Gemini / Vertex AI API. The status
// name is more precise than the code (INVALID_ARGUMENT and
// FAILED_PRECONDITION are both 400), so it is tried first; when the SDK
// could not parse a JSON body, Status holds the HTTP status line instead
// and the code decides. A RetryInfo detail sets RetryAfter.
func apiError(e genai.APIError) Classification {
	var c Classification
	if s, ok := apiStatus[strings.ToUpper(strings.TrimSpace(e.Status))]; ok {
		c = s.c
		c.StatusCode = s.code
	} else {
		switch {
		case e.Code == http.StatusGatewayTimeout:
			c = ForClass(ClassTimeout)
		case e.Code >= 400 && e.Code < 600:
			c = HTTPStatus(e.Code, nil, time.Time{})
		default:
			// No code, or one that claims success on an error: nothing
			// better can be said.
			c = ForClass(ClassUnclassified)
		}
	}
	if e.Code != 0 {
		c.StatusCode = e.Code
	}
	if d, ok := RetryInfoDelay(e.Details); ok {
		c.RetryAfter = d
	}
	return c
}
