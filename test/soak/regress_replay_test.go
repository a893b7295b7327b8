package soak

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/retry"
)

// Found by the soak (a "partial" outage of the order service: it applies the order,
// then the connection is reset before the answer): the server applied orders twice,
// both times under the same idempotency key, inside one tool call.
//
// httptransport stamps the operation's key as an Idempotency-Key header
// (httptransport/transport.go, stampIdempotencyKey). net/http treats any request with
// that header as replayable, and when a request written on a reused keep-alive
// connection gets no answer (the connection is reset or closed), its Transport sends it
// again on a new connection (net/http's persistConn.shouldRetryRequest). The second send
// is invisible above the transport: the breaker, the retrier and the journal see one
// attempt, UNKNOWN at worst (transport.go's fail even says so), and a second success
// when the new connection answers. The design's rule is that no automatic retry may
// occur for an UNKNOWN side effect; mcpguard stops the same kind of resend for MCP
// (adk-go's connection refresher), httptransport lets net/http do it.
//
// A server that honours keys applies the order once; one that does not (or that keeps
// keys for a short while) applies it twice. The request must reach the server once.
func TestHTTPTransportSendsAMutationOnce(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, `{"ok":true}`)
			return
		}
		_, _ = io.ReadAll(r.Body)
		posts.Add(1) // applied; now the answer is lost
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_ = c.(*net.TCPConn).SetLinger(0)
		_ = c.Close()
	}))
	defer srv.Close()

	client := &http.Client{Transport: httptransport.MustNew(httptransport.Config{Base: &http.Transport{}})}
	defer client.CloseIdleConnections()
	// An earlier call leaves a keep-alive connection to the service, as any busy tool has.
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()

	ctx := retry.WithIdempotencyKey(context.Background(), "op-7")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/orders", strings.NewReader(`{"op":"7"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Do(req)
	if err == nil {
		t.Fatal("the order's answer was lost, yet the call succeeded")
	}
	if c, ok := httptransport.ClassificationOf(nil, err); !ok || c.Outcome != classify.Unknown {
		t.Errorf("the outcome is %v (classified %v), want UNKNOWN", c.Outcome, ok)
	}
	if n := posts.Load(); n != 1 {
		t.Fatalf("one order reached the service %d times in one round trip: net/http resent it because "+
			"httptransport gave it an Idempotency-Key header; a mutation whose outcome is unknown must not be resent", n)
	}
}
