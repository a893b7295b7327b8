package geminifake

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"google.golang.org/genai"
)

// Reply is what the server answers to one request. The zero value answers "ok".
// The server copies it when it is handed over, except the Part values and the
// Gate, which are shared: do not change the parts afterwards.
type Reply struct {
	// Text is the answer as one text part. Defaults to "ok" when Parts, Chunks and
	// BlockReason are empty.
	Text string
	// Parts replaces Text with any parts, for example function calls. Defaults to
	// none.
	Parts []*genai.Part
	// Chunks splits a streamed answer: each string is sent as one text chunk, in
	// order, and the last chunk carries the finish reason. A non-streaming request
	// gets them joined into one text part. Defaults to one chunk holding Text or
	// Parts.
	Chunks []string
	// FinishReason ends the candidate. Defaults to STOP. Set SAFETY (or another
	// filter reason) to send a blocked candidate with no content.
	FinishReason genai.FinishReason
	// FinishMessage explains the finish reason. Defaults to "".
	FinishMessage string
	// BlockReason, when set, blocks the prompt itself: the answer has no candidates,
	// only promptFeedback with this reason. Defaults to "".
	BlockReason genai.BlockedReason
	// Empty answers 200 with an empty JSON object, "{}": no candidates, no prompt
	// feedback, nothing at all, as a broken gateway might (one "data: {}" event for
	// a stream). Defaults to false.
	Empty bool
	// Fail makes the request fail instead (see Failure). Defaults to nil.
	Fail *Failure
	// Gate holds the request at each step until the test lets it go. Defaults to
	// nil, which never holds.
	Gate *Gate
}

// Failure is an error answer in the form Google APIs use:
//
//	{"error": {"code": 503, "message": "...", "status": "UNAVAILABLE", "details": [...]}}
//
// The genai client turns it into a genai.APIError.
type Failure struct {
	// Code is the HTTP status. Required; from 400 to 599.
	Code int
	// Status is the canonical status name. Defaults to the name Google uses for
	// Code (UNAVAILABLE for 503, RESOURCE_EXHAUSTED for 429, …).
	Status string
	// Message is the error text. Defaults to a short description naming the server.
	Message string
	// RetryDelay, when positive, adds a google.rpc.RetryInfo detail asking the
	// client to wait that long. Defaults to 0 (no detail).
	RetryDelay time.Duration
	// RetryAfter, when set, is sent as the Retry-After header, verbatim ("40" or
	// an HTTP date). Defaults to "" (no header).
	RetryAfter string
	// Details are extra error details, sent after the RetryInfo one. Defaults to none.
	Details []map[string]any
	// AfterChunks applies to streams: the server first sends this many chunks of
	// the reply (with HTTP 200) and then the error as an in-band event, as the
	// real API does when a stream breaks. With 0 the stream request fails with
	// Code before any chunk. Non-streaming requests always fail with Code.
	// Defaults to 0; a count above the reply's chunks sends all of them first.
	AfterChunks int
	// Abort cuts the connection instead of sending the error (after AfterChunks
	// chunks when streaming), so the client sees a broken transfer. Defaults to false.
	Abort bool
}

// statusNames are the canonical status names Google APIs pair with HTTP codes.
var statusNames = map[int]string{
	400: "INVALID_ARGUMENT",
	401: "UNAUTHENTICATED",
	403: "PERMISSION_DENIED",
	404: "NOT_FOUND",
	409: "ABORTED",
	429: "RESOURCE_EXHAUSTED",
	499: "CANCELLED",
	500: "INTERNAL",
	501: "NOT_IMPLEMENTED",
	503: "UNAVAILABLE",
	504: "DEADLINE_EXCEEDED",
}

// statusName returns the canonical name for an HTTP error code.
func statusName(code int) string {
	if s, ok := statusNames[code]; ok {
		return s
	}
	if code >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// validate checks a reply before it is installed, so a mistake shows in the test
// that made it instead of as a strange answer later.
func (r Reply) validate(where string) error {
	if r.Fail == nil {
		return nil
	}
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "geminifake", Field: where + ".Fail." + field, Value: v, Problem: problem, Err: ErrInvalid}
	}
	f := r.Fail
	if f.Code < 400 || f.Code > 599 {
		return bad("Code", f.Code, "must be from 400 to 599")
	}
	if f.AfterChunks < 0 {
		return bad("AfterChunks", f.AfterChunks, "must not be negative")
	}
	if f.RetryDelay < 0 {
		return bad("RetryDelay", f.RetryDelay, "must not be negative")
	}
	if strings.ContainsAny(f.RetryAfter, "\r\n") {
		return bad("RetryAfter", f.RetryAfter, "must be one header line")
	}
	return nil
}

// clone copies what the caller could change after handing the reply over.
func (r Reply) clone() Reply {
	r.Parts = slices.Clone(r.Parts)
	r.Chunks = slices.Clone(r.Chunks)
	if r.Fail != nil {
		f := *r.Fail
		f.Details = slices.Clone(f.Details)
		r.Fail = &f
	}
	return r
}

// chunks returns the parts of each streamed chunk.
func (r Reply) chunks() [][]*genai.Part {
	switch {
	case len(r.Chunks) > 0:
		out := make([][]*genai.Part, len(r.Chunks))
		for i, c := range r.Chunks {
			out[i] = []*genai.Part{{Text: c}}
		}
		return out
	case len(r.Parts) > 0:
		return [][]*genai.Part{r.Parts}
	case r.Empty || r.BlockReason != "" || isFilter(r.finish()):
		return nil
	}
	text := r.Text
	if text == "" {
		text = "ok"
	}
	return [][]*genai.Part{{{Text: text}}}
}

// whole returns the parts of a non-streamed answer.
func (r Reply) whole() []*genai.Part {
	if len(r.Chunks) > 0 {
		return []*genai.Part{{Text: strings.Join(r.Chunks, "")}}
	}
	c := r.chunks()
	if len(c) == 0 {
		return nil
	}
	return c[0]
}

func (r Reply) finish() genai.FinishReason {
	if r.FinishReason == "" {
		return genai.FinishReasonStop
	}
	return r.FinishReason
}

// isFilter reports whether a finish reason means the content was withheld.
func isFilter(f genai.FinishReason) bool {
	switch f {
	case genai.FinishReasonSafety, genai.FinishReasonBlocklist, genai.FinishReasonProhibitedContent,
		genai.FinishReasonSPII, genai.FinishReasonRecitation, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return true
	}
	return false
}

// errorBody is the JSON error envelope.
func (f *Failure) errorBody(server string) map[string]any {
	status := f.Status
	if status == "" {
		status = statusName(f.Code)
	}
	msg := f.Message
	if msg == "" {
		msg = fmt.Sprintf("geminifake %s: %s", server, strings.ToLower(http.StatusText(f.Code)))
	}
	var details []map[string]any
	if f.RetryDelay > 0 {
		details = append(details, map[string]any{
			"@type":      "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": protoDuration(f.RetryDelay),
		})
	}
	details = append(details, f.Details...)
	e := map[string]any{"code": f.Code, "message": msg, "status": status}
	if len(details) > 0 {
		e["details"] = details
	}
	return map[string]any{"error": e}
}

// protoDuration writes a duration in the protobuf JSON form: decimal seconds with
// an "s" suffix ("40s", "0.500s").
func protoDuration(d time.Duration) string {
	secs := d / time.Second
	nanos := d % time.Second
	if nanos == 0 {
		return fmt.Sprintf("%ds", secs)
	}
	return strings.TrimRight(fmt.Sprintf("%d.%09d", secs, nanos), "0") + "s"
}
