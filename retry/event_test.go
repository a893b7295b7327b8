package retry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/stretchr/testify/require"
)

func TestEveryAttemptIsRecorded(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	rg := newRig(t, retry.Config{Logger: logger, Policy: retry.Policy{Version: "llm-retry-v3"}})
	s := answers(classify.ClassConnectionRefused, classify.ClassNone)
	s.each = func(int) { rg.clk.Advance(1500 * time.Millisecond) }
	res := rg.r.Do(t.Context(), retry.Operation{Dependency: "local-model", Tool: "complete", RequestID: "run-42-step-7"}, s.fn)
	require.Equal(t, retry.ReasonSucceeded, res.Reason)

	ev := rg.ev.list()
	require.Len(t, ev, 2)
	require.Equal(t, retry.Event{
		Dependency: "local-model", Tool: "complete", RequestID: "run-42-step-7", Attempt: 1,
		Outcome: classify.FailedBeforeSend, ErrorClass: classify.ClassConnectionRefused, Elapsed: 1500 * time.Millisecond,
		PolicyVersion: "llm-retry-v3", Dispatched: true, Retry: true, Delay: 50 * time.Millisecond, At: ev[0].At,
	}, ev[0])
	require.Equal(t, 2, ev[1].Attempt)
	require.Equal(t, retry.ReasonSucceeded, ev[1].Stop)
	require.EqualValues(t, 1500, ev[1].ElapsedMs())

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	var first, second map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
	require.Equal(t, map[string]any{
		"level": "WARN", "msg": "agentbreaker retry attempt", "dependency": "local-model", "tool": "complete",
		"request_id": "run-42-step-7", "attempt": 1.0, "outcome": "FAILED_BEFORE_SEND", "error_class": "connection_refused",
		"elapsed_ms": 1500.0, "breaker_state": "", "policy_version": "llm-retry-v3", "next": "retry", "delay_ms": 50.0,
	}, first)
	require.Equal(t, "INFO", second["level"])
	require.Equal(t, "succeeded", second["next"])
}

// recJournal is a retry.Journal that keeps intents in memory, to show the order of
// events around an attempt; the journal package tests the durable one.
type recJournal struct {
	mu     sync.Mutex
	log    []string
	failOn int
}

func (j *recJournal) Intend(_ context.Context, a retry.Info) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failOn == a.Number {
		return "", errors.New("disk full")
	}
	j.log = append(j.log, "intend "+a.Tool)
	return "intent-" + string(rune('0'+a.Number)), nil
}

func (j *recJournal) Record(_ context.Context, a retry.Info, c classify.Classification) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.log = append(j.log, "record "+a.IntentID+" "+c.Outcome.String())
	return nil
}

func TestJournalSurroundsEveryAttempt(t *testing.T) {
	j := &recJournal{}
	rg := newRig(t, retry.Config{Journal: j})
	s := answers(classify.ClassConnectionRefused, classify.ClassNone)
	var seen []string
	s.each = func(int) {
		j.mu.Lock()
		seen = append(seen, j.log[len(j.log)-1])
		j.mu.Unlock()
	}
	res := rg.r.Do(t.Context(), retry.Operation{Dependency: "crm", Tool: "update"}, s.fn)
	require.Equal(t, retry.ReasonSucceeded, res.Reason)
	require.Equal(t, []string{"intend update", "intend update"}, seen, "the intent is durable before the attempt is sent")
	require.Equal(t, []string{"intend update", "record intent-1 FAILED_BEFORE_SEND", "intend update", "record intent-2 SUCCEEDED"}, j.log)
	require.Equal(t, "intent-2", rg.ev.list()[1].IntentID)
}

func TestJournalFailureStopsTheAttempt(t *testing.T) {
	j := &recJournal{failOn: 1}
	rg := newRig(t, retry.Config{Journal: j})
	s := answers(classify.ClassNone)
	res := rg.r.Do(t.Context(), retry.Operation{Dependency: "crm", Tool: "update"}, s.fn)
	require.Equal(t, retry.ReasonJournalError, res.Reason)
	require.Equal(t, classify.FailedBeforeSend, res.Outcome)
	require.ErrorContains(t, res.Err, "dispatch intent not recorded: disk full")
	require.Zero(t, s.count(), "nothing is sent without a durable intent")
}

// cancelJournal cancels the caller's context while the intent is being written.
type cancelJournal struct {
	recJournal
	cancel context.CancelFunc
}

func (j *cancelJournal) Intend(ctx context.Context, a retry.Info) (string, error) {
	j.cancel()
	return "", ctx.Err()
}

func TestCallerLeavingDuringTheIntentIsNotAJournalError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	j := &cancelJournal{cancel: cancel}
	rg := newRig(t, retry.Config{Journal: j})
	s := answers(classify.ClassNone)
	res := rg.r.Do(ctx, retry.Operation{Dependency: "crm"}, s.fn)
	require.Equal(t, retry.ReasonCanceled, res.Reason)
	require.Equal(t, classify.FailedBeforeSend, res.Outcome)
	require.Zero(t, s.count())
}

// TestNextSaysWhoRetries: a granted retry of a Do loop is made by the loop ("retry");
// one of a tracked run happens only if the model issues the call again, and its
// record says so ("retry_if_reissued") instead of promising a retry (issue 48).
func TestNextSaysWhoRetries(t *testing.T) {
	next := func(e retry.Event) string {
		for _, a := range e.Attrs() {
			if a.Key == "next" {
				return a.Value.String()
			}
		}
		return ""
	}
	rg := newRig(t, retry.Config{Policy: retry.Policy{MaxAttempts: 2}})
	rg.r.Do(t.Context(), retry.Operation{Dependency: "crm", Idempotent: true}, answers(classify.ClassHTTP5xx, classify.ClassNone).fn)
	evs := rg.ev.list()
	require.Len(t, evs, 2)
	require.Equal(t, "retry", next(evs[0]))
	require.Equal(t, "succeeded", next(evs[1]))

	run, _, err := rg.r.Track("inv-1", retry.Operation{Dependency: "crm", Tool: "lookup", Idempotent: true})
	require.NoError(t, err)
	a, err := run.Admit(t.Context())
	require.NoError(t, err)
	d := a.Finish(t.Context(), classify.ForClass(classify.ClassHTTP5xx), nil)
	require.True(t, d.Retry)
	evs = rg.ev.list()
	require.Equal(t, "retry_if_reissued", next(evs[len(evs)-1]))
}
