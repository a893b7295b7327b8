package mcpguard

import (
	"bytes"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxWatched bounds the bytes of one message the watcher keeps while looking for the
// answer; a longer message is passed on unread by the watcher, and the call stays
// unanswered to the guard (which then refuses a second send: the safe side).
const maxWatched = 4 << 20

// answerWatcher passes a tools/call POST's response body to the SDK and notes, as the
// SDK reads it, whether it carries the server's answer to the call: a JSON body that
// is the response, or an event stream with a data line that is.
type answerWatcher struct {
	io.ReadCloser
	once  *onceContext
	id    jsonrpc.ID
	sse   bool
	buf   []byte
	ended bool // answer seen, or given up
}

// watchAnswer returns the watching body for resp, or nil when its content type is
// neither JSON nor an event stream.
func watchAnswer(resp *http.Response, once *onceContext, id jsonrpc.ID) *answerWatcher {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		return &answerWatcher{ReadCloser: resp.Body, once: once, id: id}
	case "text/event-stream":
		return &answerWatcher{ReadCloser: resp.Body, once: once, id: id, sse: true}
	}
	return nil
}

func (w *answerWatcher) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	if !w.ended {
		w.scan(p[:n], err == io.EOF)
	}
	return n, err
}

func (w *answerWatcher) scan(b []byte, eof bool) {
	if !w.sse {
		w.add(b)
		if eof {
			w.check(w.buf)
		}
		return
	}
	for len(b) > 0 && !w.ended {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.add(b)
			break
		}
		w.add(b[:i])
		if line := bytes.TrimSpace(w.buf); bytes.HasPrefix(line, []byte("data:")) {
			w.check(bytes.TrimSpace(line[len("data:"):]))
		}
		w.buf = w.buf[:0]
		b = b[i+1:]
	}
}

func (w *answerWatcher) add(b []byte) {
	if len(w.buf)+len(b) > maxWatched {
		w.ended, w.buf = true, nil
		return
	}
	w.buf = append(w.buf, b...)
}

// check notes the answer when msg is the response to the call.
func (w *answerWatcher) check(msg []byte) {
	if w.ended || len(msg) == 0 {
		return
	}
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return
	}
	if resp, ok := m.(*jsonrpc.Response); ok && resp.ID == w.id {
		w.once.answer()
		w.ended, w.buf = true, nil
	}
}
