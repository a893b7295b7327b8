package a2aguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/session"

	"github.com/agentbreaker/agentbreaker/a2aguard"
)

// Issue 47: the operation scope a guard sends the remote must not reach the user.
// adk-go's remote agent copies the A2A request it sent into the event that ends the
// run (CustomMetadata "a2a:request"), and the session stores that event: a scope put
// on that request would be in both. The remote must still receive it (the budget
// across the hop, TestHopOneBudgetAcrossA2A).
func TestScopeStaysOffTheUserEvents(t *testing.T) {
	for _, tc := range []struct {
		name      string
		shape     shape
		streaming bool
	}{
		{"transfer", transfer, false},
		{"transfer streaming", transfer, true},
		{"agenttool", agentTool, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rem := newRemote(t, nil)
			var scoped atomic.Int64 // requests that reached the remote with a scope
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				body, _ := io.ReadAll(req.Body)
				if bytes.Contains(body, []byte(`"operation_scope"`)) {
					scoped.Add(1)
				}
				req.Body = io.NopCloser(bytes.NewReader(body))
				rem.srv.Config.Handler.ServeHTTP(w, req)
			}))
			t.Cleanup(srv.Close)
			r := newRig(t, rigConfig{shape: tc.shape, url: srv.URL, streaming: tc.streaming})
			const n = 3
			var events []*session.Event
			for range n {
				turn := r.turn()
				require.Contains(t, answerOf(t, turn), "Invoice 42")
				events = append(events, turn.Events...)
			}
			require.EqualValues(t, n, scoped.Load(), "requests that carried the scope to the remote")

			resp, err := r.h.Sessions.Get(context.Background(), &session.GetRequest{AppName: "breakertest", UserID: "user", SessionID: r.session})
			require.NoError(t, err)
			for ev := range resp.Session.Events().All() {
				events = append(events, ev)
			}
			sawRequest := false
			for _, ev := range events {
				b, err := json.Marshal(ev.CustomMetadata)
				require.NoError(t, err)
				s := string(b)
				sawRequest = sawRequest || strings.Contains(s, "a2a:request")
				require.NotContains(t, s, "operation_scope", "event of %s", ev.Author)
				require.NotContains(t, s, `"`+a2aguard.MetadataKey+`"`, "event of %s", ev.Author)
			}
			if tc.shape == transfer {
				require.True(t, sawRequest, "adk-go copies the request into the run's last event (what this test looks at)")
			}
		})
	}
}
