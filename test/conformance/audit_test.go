package conformance_test

// The audit side of the suite: the slog JSON records, the checks on what reached the
// model and the logs, and the design document's invariant on retries.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/journal"
)

// logBuffer collects the slog JSON records of the callbacks, the retry orchestrator,
// the journal and the admission controller: the audit trail an operator reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// records parses every record; each line must be one JSON object.
func (l *logBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(l.text()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), "log line %q", sc.Text())
		out = append(out, rec)
	}
	return out
}

// requireAuditKeys checks that the audit records carry what the design document's
// event record has ("upstream, request_id, attempt, outcome, error_class, elapsed_ms,
// breaker_state, policy_version"; its checklist: "logs include request ID, attempt,
// outcome, policy version, and breaker state"), with the README's keys: the plugin's
// call and short-circuit records and the retry orchestrator's attempt records.
func (w *world) requireAuditKeys(t *testing.T) {
	t.Helper()
	want := map[string][]string{
		"call_outcome":  {"dependency", "tool", "request_id", "function_call_id", "outcome", "error_class", "elapsed_ms", "breaker_state", "policy_version"},
		"short_circuit": {"dependency", "tool", "request_id", "function_call_id", "outcome", "error_class", "breaker_state", "policy_version"},
		"retry attempt": {"dependency", "tool", "request_id", "attempt", "outcome", "error_class", "elapsed_ms", "breaker_state", "policy_version"},
	}
	recs := w.logs.records(t)
	// The request_ids an attempt record may carry: the invocations of the plugin's own
	// records, and the operation of an intent a person approved for a replay (the
	// replay is recorded under that operation, as the journal keeps it).
	invocations := map[any]bool{}
	for _, r := range recs {
		if ev, _ := r["event"].(string); want[ev] != nil || ev == "queued" && r["function_call_id"] != nil {
			invocations[r["request_id"]] = true
		}
	}
	approved, err := w.journal.Intents(context.Background(), journal.Filter{States: []journal.State{journal.StateApproved}})
	require.NoError(t, err)
	for _, in := range approved {
		invocations[in.RequestID] = true
	}
	for _, r := range recs {
		kind, _ := r["event"].(string)
		if r["msg"] == "agentbreaker retry attempt" {
			kind = "retry attempt"
			// README: request_id is "the adk-go invocation ID, in every record: ...
			// attempts ...", so an attempt record joins the call's own records.
			require.True(t, invocations[r["request_id"]], "retry attempt record whose request_id %v is no invocation of the plugin's records: %v", r["request_id"], r)
		}
		for _, k := range want[kind] {
			v, ok := r[k]
			require.True(t, ok, "%s record without %q: %v", kind, k, r)
			if s, isString := v.(string); isString && k != "error_class" {
				require.NotEmpty(t, s, "%s record with an empty %q: %v", kind, k, r)
			}
		}
		if want[kind] != nil {
			require.Equal(t, policyVersion, r["policy_version"], "%s record: %v", kind, r)
		}
	}
}

// records returns the callbacks' slog records of one event ("call_outcome",
// "short_circuit", ...) for tool ("" for every tool).
func (w *world) records(t *testing.T, event, tool string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range w.logs.records(t) {
		if r["event"] == event && (tool == "" || r["tool"] == tool) {
			out = append(out, r)
		}
	}
	return out
}

// retryRecords returns the retry orchestrator's slog attempt records for tool.
func (w *world) retryRecords(t *testing.T, tool string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range w.logs.records(t) {
		if r["msg"] == "agentbreaker retry attempt" && r["tool"] == tool {
			out = append(out, r)
		}
	}
	return out
}

// field returns key of every record, in order.
func field(recs []map[string]any, key string) []any {
	var out []any
	for _, r := range recs {
		out = append(out, r[key])
	}
	return out
}

// eventsOf returns the callbacks' events of kind k.
func (w *world) eventsOf(k callbacks.EventKind) []callbacks.Event {
	var out []callbacks.Event
	for _, e := range w.events.list() {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// fromTo lists the breaker transitions of key as "from>to:cause".
func (w *world) fromTo(key string) []string {
	var out []string
	for _, e := range w.transitions.list() {
		if e.Breaker == key {
			out = append(out, e.From.String()+">"+e.To.String()+":"+e.Cause.String())
		}
	}
	return out
}

// responses returns the function responses the model was given in a turn, as JSON
// decodes them (the form the model reads: numbers are float64).
func responses(turn *breakertest.Turn) []map[string]any {
	var out []map[string]any
	for _, fr := range turn.FunctionResponses() {
		raw, err := json.Marshal(fr.Response)
		if err != nil {
			panic(err) // a function response the model could not be sent
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			panic(err)
		}
		out = append(out, m)
	}
	return out
}

// requireNoUpstreamText asserts that no function response of the turn, and no log
// record, holds any of the texts a dependency wrote. turn may be nil (logs only).
func requireNoUpstreamText(t *testing.T, w *world, turn *breakertest.Turn, texts ...string) {
	t.Helper()
	var raw []byte
	if turn != nil {
		var err error
		raw, err = json.Marshal(responses(turn))
		require.NoError(t, err)
	}
	seen, err := json.Marshal(w.model.Requests()) // everything the model was ever sent
	require.NoError(t, err)
	logs := w.logs.text()
	for _, s := range texts {
		require.NotContains(t, string(raw), s, "upstream text reached the model")
		require.NotContains(t, string(seen), s, "upstream text reached the model's requests")
		require.NotContains(t, logs, s, "upstream text reached the logs")
	}
}

// requireNoUnsafeReplay checks the design document's invariant on the journal and on
// what the server received: "No automatic retry may occur for an UNKNOWN side effect
// unless the operation declares itself idempotent or reconciliation proves it was not
// applied." For every mutating tool, an attempt whose outcome was (or may have been)
// UNKNOWN is followed by another attempt of the same call (same tool and arguments)
// only when the journal shows it proved not applied (not_applied) or released by a
// person (approved); and the server received each idempotency key no more often than
// the journal has attempts of it that may have been sent (an application's queue
// replay, which has no intent of its own, once).
func requireNoUnsafeReplay(t *testing.T, w *world, srv *server, mutating map[string]string) {
	t.Helper()
	for tool, path := range mutating {
		intents := w.intents(t, tool)
		for i, in := range intents {
			ambiguous := in.State == journal.StateOpen || in.State == journal.StateUnknown ||
				in.State == journal.StateAwaitingOperator || in.State == journal.StateApplied ||
				in.Outcome == classify.Unknown
			if !ambiguous {
				continue
			}
			proved := in.State == journal.StateNotApplied || in.State == journal.StateApproved
			for _, later := range intents[i+1:] {
				if later.ArgsHash == in.ArgsHash {
					require.True(t, proved, "intent %s (%s, state %s) of %s was followed by attempt %d (%s) without proof it was not applied",
						in.ID, in.Outcome, in.State, tool, later.Attempt, later.ID)
				}
			}
		}
		if srv == nil {
			continue
		}
		perKey := map[string]int{}
		for _, r := range srv.requests(path) {
			perKey[r.Key]++
		}
		for key, n := range perKey {
			require.NotEmpty(t, key, "a mutation reached %s without an idempotency key", path)
			sent := 0 // attempts of the key that may have left the process
			for _, in := range intents {
				if in.IdempotencyKey == key && in.State != journal.StateFailedBeforeSend {
					sent++
				}
			}
			require.LessOrEqual(t, n, max(sent, 1), "key %s reached %s %d times, more than its journaled attempts", key, path, n)
		}
	}
}
