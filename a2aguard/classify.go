package a2aguard

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentbreaker/agentbreaker/classify"
)

// outcome is what one request to the remote agent came to: the classification the
// breaker hears, and, for a refusal the remote agent stated itself, its words.
type outcome struct {
	cls   classify.Classification
	words string // the remote's own words for a business refusal, uncleaned; "" otherwise
	// inner says the remote answered, but marked that a call of its own failed
	// (hop.go): FAILED and neutral, and its answer passes unchanged.
	inner bool
}

// judge classifies one finished request by what happened, in this order: the caller
// gave up (neutral), our own deadline fired (timeout), the server answered with a
// status other than 200 (the status, with Retry-After), the transport failed (dial
// refused, reset...), the server answered with a JSON-RPC error, the stream ended
// without a final state, the task ended failed or rejected, or the remote answered.
// The error's text is never read: a2a-go writes it with fmt from what is recorded
// here anyway.
func judge(parent, own context.Context, rec *record, last a2a.Event, err error, now time.Time) outcome {
	_, status, header, terr := rec.snapshot()
	if err != nil {
		return outcome{cls: judgeError(parent, own, status, header, terr, err, now)}
	}
	if parent.Err() != nil {
		// The stream ended because the caller went away: nothing to learn.
		return outcome{cls: classify.Error(parent, context.Cause(parent))}
	}
	st, msg, ok := finalState(last)
	switch {
	case !ok:
		// The remote closed the stream before saying how the task ended.
		c := classify.ForClass(classify.ClassTransport)
		return outcome{cls: c}
	case st == a2a.TaskStateFailed:
		// The remote agent failed the task and wrote why. Its words name an outage
		// (its model's 503, a timeout, a stack trace) or they are its answer (a
		// policy it applied): the same reading as an MCP isError result.
		text := messageText(msg)
		c := classify.MCPIsError(text)
		if c.Verdict == classify.Healthy {
			return outcome{cls: c, words: text}
		}
		return outcome{cls: c}
	case st == a2a.TaskStateRejected:
		c := classify.ForClass(classify.ClassRefused)
		c.Outcome = classify.Failed
		return outcome{cls: c, words: messageText(msg)}
	}
	if f, ok := innerMark(last); ok {
		// The remote answered in words although a call of its own failed or was
		// refused: the request failed, neutral (the remote's breaker judged the call).
		return outcome{cls: classify.Classification{Outcome: classify.Failed, Class: f.Class, Verdict: classify.Neutral, Retryable: f.Retryable}, inner: true}
	}
	return outcome{cls: classify.ForClass(classify.ClassNone)}
}

func judgeError(parent, own context.Context, status int, header http.Header, terr, err error, now time.Time) classify.Classification {
	if ownDeadline(parent, own) {
		// Our bound ended the request, before the caller's deadline: a timeout of the
		// remote's, even if the caller's deadline has passed too by now.
		return classify.ForClass(classify.ClassTimeout)
	}
	if parent.Err() != nil {
		return classify.Error(parent, err) // the caller's deadline or cancellation: neutral
	}
	if status != 0 && status != http.StatusOK {
		return classify.HTTPStatus(status, header, now)
	}
	if terr != nil {
		return classify.Error(parent, terr)
	}
	if c, ok := protocolError(err); ok {
		return c
	}
	return classify.Error(parent, err)
}

// ownDeadline reports whether the request's own deadline fired and came before the
// caller's.
func ownDeadline(parent, own context.Context) bool {
	if !errors.Is(own.Err(), context.DeadlineExceeded) {
		return false
	}
	od, _ := own.Deadline()
	pd, ok := parent.Deadline()
	return !ok || od.Before(pd)
}

// protocolError classifies the A2A errors a server answers with (JSON-RPC error
// objects, REST problem details), which a2a-go maps to its sentinels.
func protocolError(err error) (classify.Classification, bool) {
	switch {
	case errors.Is(err, a2a.ErrInternalError), errors.Is(err, a2a.ErrServerError), errors.Is(err, a2a.ErrInvalidAgentResponse):
		return classify.ForClass(classify.ClassHTTP5xx), true
	case errors.Is(err, a2a.ErrUnauthenticated), errors.Is(err, a2a.ErrUnauthorized):
		return classify.ForClass(classify.ClassAuth), true
	case errors.Is(err, a2a.ErrTaskNotFound):
		return classify.ForClass(classify.ClassNotFound), true
	case errors.Is(err, a2a.ErrInvalidParams), errors.Is(err, a2a.ErrInvalidRequest), errors.Is(err, a2a.ErrParseError),
		errors.Is(err, a2a.ErrMethodNotFound), errors.Is(err, a2a.ErrUnsupportedOperation),
		errors.Is(err, a2a.ErrUnsupportedContentType), errors.Is(err, a2a.ErrVersionNotSupported),
		errors.Is(err, a2a.ErrExtensionSupportRequired), errors.Is(err, a2a.ErrTaskNotCancelable):
		// The server answered and judged our request: it works.
		return classify.ForClass(classify.ClassHTTP4xx), true
	}
	return classify.Classification{}, false
}

// finalState returns the state an event leaves the task in, and its status message,
// with ok false for an event that is not final (a task still working, an artifact
// chunk) or no event at all. A direct message answer is final and completed; a task
// waiting for input or authorisation is final for this request.
func finalState(ev a2a.Event) (a2a.TaskState, *a2a.Message, bool) {
	var status a2a.TaskStatus
	switch e := ev.(type) {
	case *a2a.Message:
		return a2a.TaskStateCompleted, e, e != nil
	case *a2a.Task:
		if e == nil {
			return "", nil, false
		}
		status = e.Status
	case *a2a.TaskStatusUpdateEvent:
		if e == nil {
			return "", nil, false
		}
		status = e.Status
	default:
		return "", nil, false
	}
	st := status.State
	if st.Terminal() || st == a2a.TaskStateInputRequired || st == a2a.TaskStateAuthRequired {
		return st, status.Message, true
	}
	return st, nil, false
}

// messageText joins the text parts of a status message.
func messageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		if t := p.Text(); t != "" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(t)
		}
	}
	return b.String()
}
