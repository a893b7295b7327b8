package mcpguard

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"

	"github.com/agentbreaker/agentbreaker/classify"
)

// post sends one JSON-RPC message through rt under ctx.
func post(ctx context.Context, rt http.RoundTripper, url, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, err
	}
	resp, err := rt.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

const (
	callBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"charge_card","arguments":{}}}`
	pingBody = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
)

type bareContext struct{ agent.Context }

func (bareContext) Value(any) any { return nil }

func TestRoundTripperSendsACallOnce(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	rt := &onceRoundTripper{base: srv.Client().Transport, closed: &atomic.Bool{}}

	t.Run("second call refused, pings pass", func(t *testing.T) {
		hits.Store(0)
		once := &onceContext{Context: bareContext{}, tool: "charge_card"}
		ctx := context.WithValue(context.Background(), onceKey{}, once)
		_, err := post(ctx, rt, srv.URL, callBody)
		require.NoError(t, err)
		_, err = post(ctx, rt, srv.URL, pingBody)
		require.NoError(t, err, "the refresher's ping is not the call")
		_, err = post(ctx, rt, srv.URL, callBody)
		require.ErrorIs(t, err, ErrNotResent)
		require.Equal(t, classify.Unknown, classify.Classify(classify.Input{Err: err}).Outcome)
		require.Equal(t, classify.Counts, classify.Classify(classify.Input{Err: err}).Verdict)
		require.EqualValues(t, 2, hits.Load())
	})
	t.Run("404 unknown session gives the claim back", func(t *testing.T) {
		hits.Store(0)
		status.Store(http.StatusNotFound)
		once := &onceContext{Context: bareContext{}, tool: "charge_card"}
		ctx := context.WithValue(context.Background(), onceKey{}, once)
		_, err := post(ctx, rt, srv.URL, callBody)
		require.NoError(t, err)
		status.Store(http.StatusOK)
		_, err = post(ctx, rt, srv.URL, callBody)
		require.NoError(t, err, "the server never ran the first")
		_, err = post(ctx, rt, srv.URL, callBody)
		require.ErrorIs(t, err, ErrNotResent)
	})
	t.Run("a refused dial gives the claim back", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		dead := "http://" + ln.Addr().String()
		ln.Close()
		once := &onceContext{Context: bareContext{}, tool: "charge_card"}
		ctx := context.WithValue(context.Background(), onceKey{}, once)
		_, err = post(ctx, rt, dead, callBody)
		require.Error(t, err)
		require.False(t, errors.Is(err, ErrNotResent))
		_, err = post(ctx, rt, srv.URL, callBody)
		require.NoError(t, err, "nothing was sent the first time")
	})
	t.Run("read-only calls are never refused", func(t *testing.T) {
		for range 3 {
			_, err := post(context.Background(), rt, srv.URL, callBody)
			require.NoError(t, err)
		}
	})
	t.Run("closed refuses everything", func(t *testing.T) {
		rt.closed.Store(true)
		defer rt.closed.Store(false)
		_, err := post(context.Background(), rt, srv.URL, pingBody)
		require.ErrorIs(t, err, ErrClosed)
	})
}
