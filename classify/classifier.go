package classify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/agentbreaker/agentbreaker"
)

// ConfigError is the error New returns for an invalid value.
type ConfigError = agentbreaker.ConfigError

// ErrNilRule is what the *ConfigError [New] returns unwraps to when Config.Rules
// holds a nil Rule (the field names its index).
var ErrNilRule = errors.New("classify: nil rule")

// Input is everything known about one finished call. Fill in what the call
// produced and leave the rest zero.
type Input struct {
	// Context is the caller's context. If it is done, the failure is put
	// down to the caller giving up rather than to the dependency, and the
	// verdict is Neutral. nil means not known.
	Context context.Context
	// Err is the error the call returned, if any.
	Err error
	// StatusCode is the HTTP status of the response; 0 when there was no
	// response.
	StatusCode int
	// Header holds the response headers, read for Retry-After. May be nil.
	Header http.Header
	// Result is a tool's result map, read for failures reported in-band.
	// May be nil.
	Result map[string]any
	// Now is the time a Retry-After date is measured from. The zero value
	// means time.Now().
	Now time.Time
}

// Config configures a [Classifier]. The zero value gives the defaults.
type Config struct {
	// Rules are tried in order before the default rules; the first that
	// returns ok decides. Use them to teach the classifier about one
	// dependency's quirks. Defaults to none; nil entries are an error.
	Rules []Rule
}

// Classifier turns finished calls into classifications, trying its rules
// and then the defaults. It is immutable after [New] and safe for
// concurrent use, provided its rules are. A nil *Classifier applies the
// defaults alone.
type Classifier struct {
	rules []Rule
}

// New returns a Classifier for cfg. It fails with a *ConfigError (unwrapping to
// [ErrNilRule]) if a rule is nil, naming its index, so the mistake shows at start-up instead of
// as a panic in the middle of a call.
func New(cfg Config) (*Classifier, error) {
	for i, r := range cfg.Rules {
		if r == nil {
			return nil, &ConfigError{Package: "classify", Field: fmt.Sprintf("Config.Rules[%d]", i), Value: "nil",
				Problem: "rule is nil", Err: ErrNilRule}
		}
	}
	return &Classifier{rules: slices.Clone(cfg.Rules)}, nil
}

// MustNew is like [New] but panics on an invalid Config. It suits
// package-level variables whose Config is fixed in the source.
func MustNew(cfg Config) *Classifier {
	c, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return c
}

// Classify runs the rules in order and returns the first match, or the
// default classification when none matches.
//
// A rule's answer is tidied so that it cannot break the guarantees callers
// rely on: an empty Class, a zero Outcome or a zero Verdict is taken from
// the defaults; a Class that is not one of the constants becomes
// [ClassUnclassified]; a negative RetryAfter becomes 0.
func (c *Classifier) Classify(in Input) Classification {
	if c != nil {
		for _, r := range c.rules {
			if out, ok := r(in); ok {
				return tidy(out, in)
			}
		}
	}
	return Classify(in)
}

// Classify applies the default rules. In order of precedence:
//
//  1. If the call did not succeed and the caller's context is done, the
//     caller gave up: Neutral, with ClassCanceled or ClassDeadline. The
//     outcome stays FailedBeforeSend or Failed when the evidence proves
//     that (a failed dial, a definitive answer); otherwise it is Unknown.
//  2. An error that is a [LocalRejection]: FailedBeforeSend, Neutral.
//  3. The error, by the rules in this package's documentation.
//  4. The HTTP status code, by [HTTPStatus]; it also decides when the
//     error is one no rule recognises.
//  5. The tool's result map, by [ToolResult].
//
// A call with none of these is a success.
func Classify(in Input) Classification {
	c := evidence(in)
	if in.Context != nil && c.Outcome != Succeeded {
		if err := in.Context.Err(); err != nil {
			c = callerDone(c, err)
		}
	}
	return c
}

// evidence classifies the call from what the dependency and the transport
// produced, ignoring the caller's context.
func evidence(in Input) Classification {
	if in.Err != nil {
		c := classifyError(in.Err)
		if c.Class == ClassUnclassified && in.StatusCode == 0 {
			// A provider SDK's error that carries the answer's status
			// (statuserror.go): the status decides, as if a transport saw it.
			if code, h, ok := errorStatus(in.Err); ok {
				in.StatusCode = code
				if in.Header == nil {
					in.Header = h
				}
			}
		}
		if c.Class == ClassUnclassified {
			// An opaque error ("unexpected response") says less than the
			// status or the result map that came with it.
			if in.StatusCode != 0 {
				if s := HTTPStatus(in.StatusCode, in.Header, in.Now); s.Outcome != Succeeded {
					return s
				}
			}
			if r := ToolResult(in.Result); r.Outcome != Succeeded {
				return r
			}
		}
		if c.StatusCode == 0 {
			c.StatusCode = in.StatusCode
		}
		if c.RetryAfter == 0 {
			if d, ok := retryAfterHeader(in.Header, in.Now); ok {
				c.RetryAfter = d
			}
		}
		return c
	}
	if in.StatusCode != 0 {
		c := HTTPStatus(in.StatusCode, in.Header, in.Now)
		if c.Outcome != Succeeded {
			return c
		}
		// A 200 can still carry a failure in its body.
		if r := ToolResult(in.Result); r.Outcome != Succeeded {
			return r
		}
		return c
	}
	return ToolResult(in.Result)
}

// callerDone rewrites a failed call's classification for a caller whose
// context ended: whatever went wrong, the caller stopped waiting, so the
// failure is no evidence against the dependency. The status code and any
// server-stated delay are facts and are kept.
func callerDone(c Classification, ctxErr error) Classification {
	class := ClassCanceled
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		class = ClassDeadline
	}
	out := ForClass(class)
	if c.Outcome == FailedBeforeSend || c.Outcome == Failed {
		out.Outcome = c.Outcome
	}
	out.StatusCode = c.StatusCode
	out.RetryAfter = c.RetryAfter
	return out
}

// tidy enforces the Classification invariants on a rule's answer.
func tidy(c Classification, in Input) Classification {
	if c.Class == "" || c.Outcome == 0 || c.Verdict == 0 {
		d := Classify(in)
		if c.Class == "" {
			c.Class = d.Class
		}
		if c.Outcome == 0 {
			c.Outcome = d.Outcome
		}
		if c.Verdict == 0 {
			c.Verdict = d.Verdict
		}
	}
	if !c.Class.Known() {
		c.Class = ClassUnclassified
	}
	if c.RetryAfter < 0 {
		c.RetryAfter = 0
	}
	return c
}
