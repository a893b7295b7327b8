package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
)

// State is where an intent stands. Its values are stored as text.
type State string

// The states of an intent.
const (
	// StateOpen: the intent is durable and the call may have been sent; no outcome yet.
	// A crash leaves intents here.
	StateOpen State = "open"
	// StateSucceeded, StateFailed and StateFailedBeforeSend: the call ended with that
	// outcome. Final.
	StateSucceeded        State = "succeeded"
	StateFailed           State = "failed"
	StateFailedBeforeSend State = "failed_before_send"
	// StateUnknown: the call's outcome was UNKNOWN; reconciliation has not settled it.
	StateUnknown State = "unknown"
	// StateApplied and StateNotApplied: a status lookup settled it. Final.
	StateApplied    State = "applied"
	StateNotApplied State = "not_applied"
	// StateAwaitingOperator: no lookup could settle it; an operator must Approve or
	// Discard it, and until then the mutation is not replayed.
	StateAwaitingOperator State = "awaiting_operator"
	// StateApproved: an operator allowed a replay (the call is treated as not applied).
	// Final.
	StateApproved State = "approved"
	// StateDiscarded: an operator closed it without a replay (treated as done). Final.
	StateDiscarded State = "discarded"
	// StateSuperseded: a later attempt of the same operation (same request id and
	// idempotency key) succeeded, so this attempt's unknown outcome needs no
	// reconciliation: under one idempotency key the operation took effect once (and a
	// read has no effect to reconcile). Final.
	StateSuperseded State = "superseded"
)

// unsettled are the states reconciliation and operators work on.
var unsettled = []State{StateOpen, StateUnknown, StateAwaitingOperator}

// Settled reports whether the intent needs nothing more.
func (s State) Settled() bool {
	switch s {
	case StateOpen, StateUnknown, StateAwaitingOperator:
		return false
	}
	return true
}

func stateOf(o classify.Outcome) (State, error) {
	switch o {
	case classify.Succeeded:
		return StateSucceeded, nil
	case classify.Failed:
		return StateFailed, nil
	case classify.FailedBeforeSend:
		return StateFailedBeforeSend, nil
	case classify.Unknown:
		return StateUnknown, nil
	}
	return "", &ConfigError{Package: "journal", Field: "Classification.Outcome", Value: o, Problem: "is not an outcome"}
}

// Dispatch describes one attempt about to be sent.
type Dispatch struct {
	// RequestID names the logical operation (retry.Info.RequestID). Required.
	RequestID string
	// IdempotencyKey is the operation's key, the same for every attempt
	// (retry.NewIdempotencyKey). Required.
	IdempotencyKey string
	// Dependency is the dependency key; it picks the status lookup. Required.
	Dependency string
	// Tool names the tool. Required.
	Tool string
	// Args are the call's arguments; they are hashed, and kept only with
	// Config.StoreArguments.
	Args map[string]any
	// Attempt counts from 1. Required.
	Attempt int
	// PolicyVersion is the retry or breaker policy in force. Defaults to "".
	PolicyVersion string
}

// Intent is one durable dispatch intent and what became of it.
type Intent struct {
	ID             string
	RequestID      string
	IdempotencyKey string
	Dependency     string
	Tool           string
	// ArgsHash is the hex hash of the canonical arguments (see Journal.HashArgs).
	ArgsHash string
	// Args are the canonical arguments (JSON), or nil unless Config.StoreArguments.
	Args          []byte
	Attempt       int
	PolicyVersion string
	CreatedAt     time.Time
	// Owner identifies the Journal instance (process) that wrote the intent.
	Owner string
	// Checksum covers every field above; reads verify it.
	Checksum string

	State State
	// Outcome and ErrorClass are the call's classification, once recorded.
	Outcome    classify.Outcome
	ErrorClass classify.Class
	UpdatedAt  time.Time
	// Note says why the state last changed, for an operator.
	Note string
}

// checksum hashes the fields fixed at creation, each with its length, so that no two
// different records share a checksum by shifting bytes between fields.
func (in *Intent) checksum() string {
	h := sha256.New()
	field := func(h hash.Hash, s string) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	for _, s := range []string{
		in.ID, in.RequestID, in.IdempotencyKey, in.Dependency, in.Tool, in.ArgsHash, string(in.Args),
		strconv.Itoa(in.Attempt), in.PolicyVersion, strconv.FormatInt(in.CreatedAt.UnixMicro(), 10), in.Owner,
	} {
		field(h, s)
	}
	if in.Args == nil {
		h.Write([]byte{0}) // nil and empty arguments differ
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Verify checks the intent against its checksum and its state against the known ones.
func (in *Intent) Verify() error {
	if in.checksum() != in.Checksum {
		return fmt.Errorf("%w: intent %s: a field fixed at creation was changed", ErrCorrupt, in.ID)
	}
	if !knownState(in.State) {
		return fmt.Errorf("%w: intent %s: unknown state %.40q", ErrCorrupt, in.ID, string(in.State))
	}
	return nil
}

func knownState(s State) bool {
	switch s {
	case StateOpen, StateSucceeded, StateFailed, StateFailedBeforeSend, StateUnknown, StateApplied,
		StateNotApplied, StateAwaitingOperator, StateApproved, StateDiscarded, StateSuperseded:
		return true
	}
	return false
}

const intentCols = `id, request_id, idempotency_key, dependency, tool, args_hash, args, attempt, policy_version,
	created_at, owner, checksum, state, outcome, error_class, updated_at, note`

const intentColCount = 17

func (in *Intent) values() []any {
	return []any{in.ID, in.RequestID, in.IdempotencyKey, in.Dependency, in.Tool, in.ArgsHash, in.Args,
		int64(in.Attempt), in.PolicyVersion, in.CreatedAt.UnixMicro(), in.Owner, in.Checksum, string(in.State),
		outcomeText(in.Outcome), string(in.ErrorClass), in.UpdatedAt.UnixMicro(), in.Note}
}

func scanIntent(scan func(...any) error) (Intent, error) {
	var in Intent
	var attempt, created, updated int64
	var state, outcome, class string
	if err := scan(&in.ID, &in.RequestID, &in.IdempotencyKey, &in.Dependency, &in.Tool, &in.ArgsHash, &in.Args,
		&attempt, &in.PolicyVersion, &created, &in.Owner, &in.Checksum, &state, &outcome, &class, &updated, &in.Note); err != nil {
		return in, fmt.Errorf("%w: unreadable row: %v", ErrCorrupt, err)
	}
	in.Attempt = int(attempt)
	in.CreatedAt = time.UnixMicro(created).UTC()
	in.UpdatedAt = time.UnixMicro(updated).UTC()
	in.State = State(state)
	in.Outcome = parseOutcome(outcome)
	in.ErrorClass = classify.Class(class)
	return in, in.Verify()
}

func outcomeText(o classify.Outcome) string {
	if o == 0 {
		return ""
	}
	return o.String()
}

func parseOutcome(s string) classify.Outcome {
	for _, o := range []classify.Outcome{classify.Succeeded, classify.FailedBeforeSend, classify.Failed, classify.Unknown} {
		if o.String() == s {
			return o
		}
	}
	return 0
}
