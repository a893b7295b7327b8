package modelfailover

import (
	"bytes"
	"encoding/json"
	"io"
)

// sseSniffer passes a server-sent event stream through to the client and watches
// it for the OpenAI Responses API's "response.incomplete" event with a content
// filter as the reason. openaimodel drops that event: a filtered stream with no
// output ends without any response, and one with output ends as if complete. The
// transport is the only place the filter can still be seen. Only the event's
// reason is read; the stream's text is never kept past one line.
type sseSniffer struct {
	io.ReadCloser
	rec  *recorder
	line []byte
	over bool // the current line is longer than maxSniff: skip it
}

func (s *sseSniffer) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	for chunk := p[:n]; len(chunk) > 0; {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			s.keep(chunk)
			break
		}
		s.keep(chunk[:i])
		if !s.over {
			s.event(s.line)
		}
		s.line, s.over = s.line[:0], false
		chunk = chunk[i+1:]
	}
	return n, err
}

func (s *sseSniffer) keep(b []byte) {
	if s.over {
		return
	}
	if len(s.line)+len(b) > maxSniff {
		s.over, s.line = true, s.line[:0]
		return
	}
	s.line = append(s.line, b...)
}

var incompleteEvent = []byte(`"response.incomplete"`)

// event reads one line of the stream.
func (s *sseSniffer) event(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
	if !ok || !bytes.Contains(data, incompleteEvent) {
		return
	}
	var ev struct {
		Type     string `json:"type"`
		Response struct {
			IncompleteDetails *struct {
				Reason string `json:"reason"`
			} `json:"incomplete_details"`
			Output []json.RawMessage `json:"output"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &ev) != nil || ev.Type != "response.incomplete" {
		return
	}
	if d := ev.Response.IncompleteDetails; d != nil && d.Reason == "content_filter" {
		s.rec.mu.Lock()
		s.rec.filtered = true
		settle := s.rec.settleEmpty
		s.rec.mu.Unlock()
		if len(ev.Response.Output) == 0 && settle != nil {
			// openaimodel ends such a stream without any response, so no
			// callback will ever see this call: the transport settles it.
			settle()
		}
	}
}
