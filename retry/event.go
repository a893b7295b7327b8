package retry

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/redact"
)

// Event is the record of one attempt: made, or refused before it was sent. It is small
// and replayable: with the policy version it explains why two runs decided differently.
type Event struct {
	Dependency string
	Tool       string
	RequestID  string
	// Attempt counts from 1.
	Attempt int
	// Outcome and ErrorClass classify the attempt; a refused attempt is
	// FAILED_BEFORE_SEND with the class of the refusal (breaker_open, ...).
	Outcome    classify.Outcome
	ErrorClass classify.Class
	// Elapsed is how long the attempt took; zero for a refused one.
	Elapsed time.Duration
	// BreakerState is the state of the dependency's breaker when the attempt was
	// admitted or refused (by this package or a lower layer); "" when none was consulted.
	BreakerState  string
	PolicyVersion string
	// Dispatched reports that the attempt was handed to the caller's function.
	Dispatched bool
	// Retry and Delay say that another attempt follows after Delay; otherwise Stop says
	// why the operation ended.
	Retry bool
	Delay time.Duration
	Stop  Reason
	At    time.Time
	// Err is the attempt's error or the refusal's cause. Hooks get it wrapped by
	// Config.Redactor: its text is a fingerprint; errors.Is and errors.As see through.
	Err error
	// JournalErr is set when the outcome could not be recorded in the journal.
	JournalErr error
	// IntentID is the journal's id for the attempt's intent, when there is a journal.
	IntentID string

	// reissue: the run is tracked (Retrier.Track), so a granted retry happens only if
	// the caller (the model) issues the call again. The record says so.
	reissue bool
}

// ElapsedMs is Elapsed in whole milliseconds, as the record's elapsed_ms field.
func (e Event) ElapsedMs() int64 { return e.Elapsed.Milliseconds() }

// Attrs returns the record as slog attributes with snake_case keys. Errors appear as
// their fingerprint (redact.Default), never as their text.
func (e Event) Attrs() []slog.Attr { return e.attrs(redact.Default) }

func (e Event) attrs(red *redact.Redactor) []slog.Attr {
	attrs := []slog.Attr{
		slog.String("dependency", e.Dependency),
		slog.String("tool", e.Tool),
		slog.String("request_id", e.RequestID),
		slog.Int("attempt", e.Attempt),
		slog.String("outcome", e.Outcome.String()),
		slog.String("error_class", string(e.ErrorClass)),
		slog.Int64("elapsed_ms", e.ElapsedMs()),
		slog.String("breaker_state", e.BreakerState),
		slog.String("policy_version", e.PolicyVersion),
	}
	switch {
	case e.Retry && e.reissue:
		// Granted, not made: the model decides whether to call again.
		attrs = append(attrs, slog.String("next", "retry_if_reissued"), slog.Int64("delay_ms", e.Delay.Milliseconds()))
	case e.Retry:
		attrs = append(attrs, slog.String("next", "retry"), slog.Int64("delay_ms", e.Delay.Milliseconds()))
	default:
		attrs = append(attrs, slog.String("next", string(e.Stop)))
	}
	if e.IntentID != "" {
		attrs = append(attrs, slog.String("intent_id", e.IntentID))
	}
	if e.Err != nil {
		attrs = append(attrs, red.ErrorAttr("error", unwrapRedacted(e.Err)))
	}
	if e.JournalErr != nil {
		// A status lookup's error can quote the dependency too.
		attrs = append(attrs, red.ErrorAttr("journal_error", unwrapRedacted(e.JournalErr)))
	}
	return attrs
}

// emit fills in the operation's fields and hands the event to the hooks and the logger.
// Called without locks.
func (run *Run) emit(ctx context.Context, e Event) {
	e.Dependency = run.op.Dependency
	e.Tool = run.op.Tool
	e.RequestID = run.op.RequestID
	e.PolicyVersion = run.pol.Version
	r := run.r
	red := r.cfg.Redactor
	raw := e
	e.Err, e.JournalErr = red.Wrap(e.Err), red.Wrap(e.JournalErr)
	for _, h := range r.cfg.OnAttempt {
		h(ctx, e)
	}
	if hs := r.added.Load(); hs != nil {
		for _, h := range *hs {
			h(ctx, e)
		}
	}
	if l := r.cfg.Logger; l != nil {
		level := slog.LevelInfo
		if e.Outcome != classify.Succeeded {
			level = slog.LevelWarn
		}
		l.LogAttrs(ctx, level, "agentbreaker retry attempt", raw.attrs(red)...)
	}
}

// unwrapRedacted returns the error inside a redact.Error, so that an excerpt (when
// the Redactor makes them) is of the error's text and not of its fingerprint.
func unwrapRedacted(err error) error {
	if re, ok := err.(*redact.Error); ok {
		return re.Unwrap()
	}
	return err
}
