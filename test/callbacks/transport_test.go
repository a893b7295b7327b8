package callbacks_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/internal/callbackstest"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/payloads"
	"github.com/agentbreaker/agentbreaker/retry"
)

// poolWait is a base transport whose first request waits for a pooled connection until
// httptransport's timeout fires (the test fires it at once): nothing is ever written.
// Later requests succeed.
type poolWait struct {
	fire atomic.Pointer[func()]
	n    atomic.Int64
}

func (p *poolWait) afterFunc(_ time.Duration, f func()) func() bool {
	p.fire.Store(&f)
	return func() bool { return true }
}

func (p *poolWait) RoundTrip(req *http.Request) (*http.Response, error) {
	if p.n.Add(1) == 1 {
		(*p.fire.Load())()
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(`{}`)), Request: req}, nil
}

// Issue 12e: a request httptransport proves was never sent (its timeout fired while it
// waited for a connection) is FAILED_BEFORE_SEND: a mutating tool's call is not
// "outcome unknown, do not repeat", and the model's re-issue goes through.
func TestTransportClassificationIsHonoured(t *testing.T) {
	t.Parallel()
	base := &poolWait{}
	client := &http.Client{Transport: httptransport.MustNew(httptransport.Config{Base: base, Timeout: 5 * time.Second, AfterFunc: base.afterFunc})}
	charge := callbackstest.FnTool(t, "charge", func(ctx agent.Context, _ map[string]any) (map[string]any, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://payments.invalid/charge", nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		_ = resp.Body.Close()
		return map[string]any{"status": "ok"}, nil
	})
	rec := &callbackstest.Attempts{}
	var j *journal.Journal
	args := map[string]any{"amount": 42}
	f := callbackstest.New(t, callbackstest.Config{
		Tools:     []tool.Tool{charge},
		Steps:     []breakertest.Step{breakertest.Call("charge", args), breakertest.Call("charge", args), breakertest.Text("done")},
		Deps:      map[string]dependencymap.Dependency{"payments": {Tools: []string{"charge"}}},
		Callbacks: callbacks.Config{SideEffects: callbacks.SideEffects{MutatingTools: []string{"charge"}}},
		Prepare: func(f *callbackstest.Fixture, cfg *callbacks.Config) {
			var err error
			j, err = journal.Open(context.Background(), journal.Config{Backend: sqlite.Backend{Path: filepath.Join(t.TempDir(), "j.db")}, Clock: f.Clock})
			require.NoError(t, err)
			t.Cleanup(func() { _ = j.Close() })
			cfg.SideEffects.Retry = retry.MustNew(retry.Config{Journal: j.ForRetry(), Clock: f.Clock, OnAttempt: []func(context.Context, retry.Event){rec.Add}})
			cfg.SideEffects.Journal = j
		},
	})
	turn := f.Run(t, "charge it")
	pending, _, err := j.Backlog(context.Background())
	require.NoError(t, err)
	require.Zero(t, pending, "nothing journaled for an operator: the first attempt provably never left")
	require.Equal(t, int64(2), base.n.Load(), "the re-issue reached the transport")
	rs := turn.FunctionResponses()
	require.Len(t, rs, 2)
	require.NotEqual(t, payloads.TypeOutcomeUnknown, rs[0].Response["response_type"])
	require.Equal(t, "ok", rs[1].Response["status"])
	out := f.Events.Of(callbacks.EventCallOutcome)
	require.Len(t, out, 2)
	require.Equal(t, classify.FailedBeforeSend, out[0].Outcome)
	require.Equal(t, classify.ClassConnectTimeout, out[0].Class)
	evs := rec.List()
	require.NotEmpty(t, evs)
	require.Equal(t, classify.FailedBeforeSend, evs[0].Outcome)
	f.RequireClean(t)
}
