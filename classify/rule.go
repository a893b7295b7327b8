package classify

import (
	"errors"
	"regexp"

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

// MatchText returns a Rule that gives c to every failed call whose dependency's own
// words match re: the error's text, or the words of a failure its result reports
// in-band ([FailureText]). It is for a server known to put its upstream's outages in
// words the defaults do not read, for example an MCP server whose isError text says
// "payment processor unreachable":
//
//	classify.MatchText(regexp.MustCompile(`(?i)processor unreachable`), classify.ForClass(classify.ClassHTTP5xx))
//
// For an MCP isError result the outcome is Failed whatever c says (the server
// answered). The text searched is bounded (4 KiB). A nil re matches nothing.
func MatchText(re *regexp.Regexp, c Classification) Rule {
	if re == nil {
		return func(Input) (Classification, bool) { return Classification{}, false }
	}
	return func(in Input) (Classification, bool) {
		var text string
		switch {
		case in.Err != nil:
			text = errorText(in.Err)
		case in.Result != nil && ToolResult(in.Result).Outcome != Succeeded:
			text = FailureText(in.Result)
		default:
			return Classification{}, false
		}
		if len(text) > maxSignalText {
			text = text[:maxSignalText]
		}
		if !re.MatchString(text) {
			return Classification{}, false
		}
		out := c
		if in.Err != nil {
			if _, ok := MCPToolFailure(in.Err); ok {
				out.Outcome = Failed
			}
		}
		return out, true
	}
}
