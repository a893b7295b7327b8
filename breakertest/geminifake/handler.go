package geminifake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"google.golang.org/genai"
)

// The wire format of generateContent answers, as the Gemini API sends them.
type (
	wireResponse struct {
		Candidates     []wireCandidate `json:"candidates,omitempty"`
		PromptFeedback *wireFeedback   `json:"promptFeedback,omitempty"`
		UsageMetadata  *wireUsage      `json:"usageMetadata,omitempty"`
		ModelVersion   string          `json:"modelVersion,omitempty"`
		ResponseID     string          `json:"responseId,omitempty"`
	}
	wireCandidate struct {
		Content       *genai.Content     `json:"content,omitempty"`
		FinishReason  genai.FinishReason `json:"finishReason,omitempty"`
		FinishMessage string             `json:"finishMessage,omitempty"`
		Index         int                `json:"index"`
		SafetyRatings []wireRating       `json:"safetyRatings,omitempty"`
	}
	wireFeedback struct {
		BlockReason   genai.BlockedReason `json:"blockReason"`
		SafetyRatings []wireRating        `json:"safetyRatings,omitempty"`
	}
	wireRating struct {
		Category    string `json:"category"`
		Probability string `json:"probability"`
		Blocked     bool   `json:"blocked,omitempty"`
	}
	wireUsage struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount,omitempty"`
		TotalTokenCount      int `json:"totalTokenCount"`
	}
	wireRequest struct {
		Contents          []*genai.Content `json:"contents"`
		SystemInstruction *genai.Content   `json:"systemInstruction"`
	}
)

var blockedRating = []wireRating{{Category: "HARM_CATEGORY_DANGEROUS_CONTENT", Probability: "HIGH", Blocked: true}}

// parsePath splits "/v1beta/models/NAME:METHOD" into its model and method.
func parsePath(path string) (model, method string, ok bool) {
	rest := strings.TrimPrefix(path, "/")
	_, rest, ok = strings.Cut(rest, "/") // API version
	if !ok {
		return "", "", false
	}
	rest, ok = strings.CutPrefix(rest, "models/")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return "", "", false
	}
	model, method = rest[:i], rest[i+1:]
	if method != "generateContent" && method != "streamGenerateContent" {
		return "", "", false
	}
	return model, method, !strings.Contains(model, "/")
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.count()
	model, method, ok := parsePath(r.URL.Path)
	if !ok || r.Method != http.MethodPost {
		s.writeError(w, &Failure{Code: http.StatusNotFound,
			Message: fmt.Sprintf("geminifake %s: no method %s %s", s.name, r.Method, r.URL.Path)})
		return
	}
	body, err := io.ReadAll(r.Body)
	req := Request{Model: model, Method: method, Stream: method == "streamGenerateContent",
		Header: r.Header.Clone(), Body: body}
	var in wireRequest
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		err = dec.Decode(&in)
	}
	req.Contents, req.SystemInstruction = in.Contents, in.SystemInstruction
	s.record(req)
	switch {
	case err != nil:
		s.writeError(w, &Failure{Code: http.StatusBadRequest,
			Message: fmt.Sprintf("geminifake %s: invalid JSON payload: %v", s.name, err)})
		return
	case r.Header.Get("x-goog-api-key") == "" && r.Header.Get("Authorization") == "":
		s.writeError(w, &Failure{Code: http.StatusForbidden,
			Message: fmt.Sprintf("geminifake %s: the request has no API key", s.name)})
		return
	case req.Stream && r.URL.Query().Get("alt") != "sse":
		s.writeError(w, &Failure{Code: http.StatusBadRequest,
			Message: fmt.Sprintf("geminifake %s: streamGenerateContent is served only with alt=sse", s.name)})
		return
	}
	reply := s.pick()
	done := r.Context().Done()
	// A held request that gives up (its client left, or the server is closing)
	// breaks the connection: ending the handler normally would send an empty
	// answer, or end a stream as if it had finished.
	wait := func() {
		if reply.Gate != nil && !reply.Gate.wait(done, s.closing) {
			panic(http.ErrAbortHandler)
		}
	}
	if reply.Gate != nil && !reply.Gate.arrive(req, done, s.closing) {
		panic(http.ErrAbortHandler)
	}
	if req.Stream {
		s.stream(w, req, reply, wait)
		return
	}
	wait()
	if f := reply.Fail; f != nil {
		if f.Abort {
			panic(http.ErrAbortHandler) // net/http closes the connection without logging
		}
		s.writeError(w, f)
		return
	}
	s.writeJSON(w, http.StatusOK, s.answer(req, reply, reply.whole(), true))
}

// stream answers with server-sent events, one JSON answer per event.
func (s *Server) stream(w http.ResponseWriter, req Request, reply Reply, wait func()) {
	f := reply.Fail
	if f != nil && f.AfterChunks == 0 {
		wait()
		if f.Abort {
			panic(http.ErrAbortHandler)
		}
		s.writeError(w, f)
		return
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	chunks := reply.chunks()
	n := len(chunks)
	if f != nil {
		n = min(f.AfterChunks, n)
	}
	if n == 0 && f == nil {
		// A blocked prompt, a filtered candidate or an empty answer: one event with
		// no content.
		wait()
		send(s.answer(req, reply, nil, true))
		return
	}
	for i := range n {
		wait()
		send(s.answer(req, reply, chunks[i], f == nil && i == len(chunks)-1))
	}
	if f == nil {
		return
	}
	wait()
	if f.Abort {
		panic(http.ErrAbortHandler)
	}
	send(f.errorBody(s.name))
}

// answer builds one answer; final adds the finish reason and token counts.
func (s *Server) answer(req Request, r Reply, parts []*genai.Part, final bool) wireResponse {
	if r.Empty {
		return wireResponse{}
	}
	out := wireResponse{ModelVersion: s.version, ResponseID: "geminifake-" + s.name}
	if out.ModelVersion == "" {
		out.ModelVersion = req.Model
	}
	usage := &wireUsage{PromptTokenCount: words(req.Contents), CandidatesTokenCount: words([]*genai.Content{{Parts: parts}})}
	usage.TotalTokenCount = usage.PromptTokenCount + usage.CandidatesTokenCount
	if r.BlockReason != "" {
		out.PromptFeedback = &wireFeedback{BlockReason: r.BlockReason, SafetyRatings: blockedRating}
		out.UsageMetadata = usage
		return out
	}
	c := wireCandidate{}
	if len(parts) > 0 {
		c.Content = &genai.Content{Role: genai.RoleModel, Parts: parts}
	}
	if final {
		c.FinishReason = r.finish()
		c.FinishMessage = r.FinishMessage
		if isFilter(c.FinishReason) {
			c.SafetyRatings = blockedRating
		}
		out.UsageMetadata = usage
	}
	out.Candidates = []wireCandidate{c}
	return out
}

// words is a stand-in token count: the words in the text parts.
func words(cs []*genai.Content) int {
	n := 0
	for _, c := range cs {
		if c == nil {
			continue
		}
		for _, p := range c.Parts {
			if p != nil {
				n += len(strings.Fields(p.Text))
			}
		}
	}
	return n
}

func (s *Server) writeError(w http.ResponseWriter, f *Failure) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	s.writeJSON(w, f.Code, f.errorBody(s.name))
}

func (s *Server) writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a Part holding something JSON cannot encode gets here: say so.
		code = http.StatusInternalServerError
		b, _ = json.Marshal((&Failure{Code: code, Message: "geminifake: cannot encode reply: " + err.Error()}).errorBody(s.name))
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
