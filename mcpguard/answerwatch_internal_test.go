package mcpguard

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/require"
)

func TestAnswerWatcher(t *testing.T) {
	id, err := jsonrpc.MakeID(float64(7))
	require.NoError(t, err)
	tests := []struct {
		name, contentType, body string
		want                    bool
	}{
		{"json answer", "application/json", `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, true},
		{"json error answer", "application/json; charset=utf-8", `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"x"}}`, true},
		{"json answer to another call", "application/json", `{"jsonrpc":"2.0","id":8,"result":{}}`, false},
		{"sse answer after a notification", "text/event-stream",
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
				"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n", true},
		{"sse server request with the same id", "text/event-stream",
			"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{}}\n\n", false},
		{"sse cut before the answer", "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"res", false},
		{"too long to watch", "application/json", `{"jsonrpc":"2.0","id":7,"result":{"x":"` + strings.Repeat("a", maxWatched) + `"}}`, false},
		{"other content type", "text/plain", `{"jsonrpc":"2.0","id":7,"result":{}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			once := &onceContext{}
			once.state.Store(inFlight)
			resp := &http.Response{Header: http.Header{"Content-Type": {tt.contentType}},
				Body: io.NopCloser(iotest.OneByteReader(strings.NewReader(tt.body)))} // every chunk boundary
			if w := watchAnswer(resp, once, id); w != nil {
				resp.Body = w
			}
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tt.body, string(got), "the SDK reads the body unchanged")
			require.Equal(t, tt.want, once.state.Load() == answered)
		})
	}
}
