package classify

import (
	"net/http"
	"strconv"
	"time"
)

// ToolError is an error a tool author returns, or wraps with %w, to say what the
// dependency did, so that no guessing from error text is needed: [Classify] finds it
// anywhere in the error's chain and takes its classification. Build one with
// [StatusError], [NotFound], [InvalidInput] or [UpstreamFailure].
//
// Its Error text is the message the tool author gave, or a fixed phrase when that is
// empty; it is what adk-go hands the model when no callback answers the error, so
// write it for the model and never put the dependency's response body in it.
//
// A ToolError is an immutable value, safe to share between goroutines.
type ToolError struct {
	// Classification is what the call means for the breaker and for retries.
	Classification Classification
	// Message is the tool author's description of the failure, for the model.
	Message string
}

// Error returns the message, or a fixed phrase naming the class and the status code.
func (e *ToolError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	c := e.classification()
	s := string(c.Class)
	if c.StatusCode != 0 {
		s += " (HTTP " + strconv.Itoa(c.StatusCode) + ")"
	}
	return s
}

// classification returns e's classification made whole: a ToolError built by hand
// with an empty or unknown Class is ClassUnclassified, and zero fields take the
// class's defaults, so an error can never read as a success by accident.
func (e *ToolError) classification() Classification {
	c := e.Classification
	if !c.Class.Known() || c.Class == ClassNone && c.Outcome != Succeeded {
		d := ForClass(ClassUnclassified)
		d.StatusCode, d.RetryAfter = c.StatusCode, c.RetryAfter
		c = d
	}
	d := ForClass(c.Class)
	if c.Outcome == 0 {
		c.Outcome = d.Outcome
	}
	if c.Verdict == 0 {
		c.Verdict = d.Verdict
	}
	if c.RetryAfter < 0 {
		c.RetryAfter = 0
	}
	return c
}

// StatusError reports that the dependency answered with an HTTP status code; it is
// classified by the [HTTPStatus] rules (404 and 400 are Healthy, 429 and 5xx count).
// retryAfter is the delay the server asked for (0 when none). A code outside 100–599
// classifies as [ClassUnclassified].
func StatusError(code int, retryAfter time.Duration, message string) error {
	c := HTTPStatus(code, nil, time.Time{})
	if retryAfter > 0 && c.Outcome != Succeeded {
		c.RetryAfter = retryAfter
	}
	if message == "" {
		message = "HTTP " + strconv.Itoa(code)
		if t := http.StatusText(code); t != "" {
			message += " " + t
		}
	}
	return &ToolError{Classification: c, Message: message}
}

// NotFound reports that the dependency worked and found nothing for the arguments it
// was given (a 404, an unknown ID): the model's mistake, not an outage. Failed,
// [ClassNotFound], Healthy, not retryable.
func NotFound(message string) error {
	return &ToolError{Classification: ForClass(ClassNotFound), Message: message}
}

// InvalidInput reports that the dependency, or the tool itself, rejected the
// arguments the model supplied. Failed, [ClassValidation], Healthy, not retryable.
func InvalidInput(message string) error {
	return &ToolError{Classification: ForClass(ClassValidation), Message: message}
}

// UpstreamFailure reports that the dependency failed to do its job (an error page, a
// broken answer, a failure it reported in its own words). It may have applied the
// request before failing, so the outcome is Unknown: [ClassHTTP5xx], Counts,
// retryable. retryAfter is the delay the dependency asked for (0 when none).
func UpstreamFailure(retryAfter time.Duration, message string) error {
	c := ForClass(ClassHTTP5xx)
	if retryAfter > 0 {
		c.RetryAfter = retryAfter
	}
	return &ToolError{Classification: c, Message: message}
}
