package classify

import (
	"errors"

	"google.golang.org/genai"
)

// Rule classifies a call in a way the defaults do not, for one dependency.
// It returns ok=false to pass the call on to the next rule and finally to
// the defaults. Rules run outside any lock, possibly on many goroutines at
// once, so they must be safe for concurrent use; they should be cheap,
// because they run on every call.
//
// Start from [ForClass] so the fields stay consistent:
//
//	func(in classify.Input) (classify.Classification, bool) {
//		if in.StatusCode == http.StatusConflict {
//			return classify.ForClass(classify.ClassHTTP5xx), true // this API says 409 when overloaded
//		}
//		return classify.Classification{}, false
//	}
type Rule func(in Input) (c Classification, ok bool)

// MatchError returns a Rule that gives c to every call whose error matches
// target by [errors.Is], for example a tool's own sentinel for "no such
// record".
func MatchError(target error, c Classification) Rule {
	return func(in Input) (Classification, bool) {
		if in.Err != nil && errors.Is(in.Err, target) {
			return c, true
		}
		return Classification{}, false
	}
}

// MatchStatus returns a Rule that gives c to every call whose HTTP status
// is code, whether it arrived in Input.StatusCode or as the code of a
// genai.APIError in the error chain. If c.StatusCode is zero, it is set to
// code. A code of 0 or less matches nothing, because 0 is what every call
// without a response carries.
func MatchStatus(code int, c Classification) Rule {
	if code <= 0 {
		return func(Input) (Classification, bool) { return Classification{}, false }
	}
	if c.StatusCode == 0 {
		c.StatusCode = code
	}
	return func(in Input) (Classification, bool) {
		if in.StatusCode == code || apiCode(in.Err) == code {
			return c, true
		}
		return Classification{}, false
	}
}

// apiCode returns the Code of a genai.APIError in err's chain, or 0.
func apiCode(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := errors.AsType[genai.APIError](err); ok {
		return e.Code
	}
	if e, ok := errors.AsType[*genai.APIError](err); ok && e != nil {
		return e.Code
	}
	return 0
}
