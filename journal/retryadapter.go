package journal

import (
	"context"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/retry"
)

// ForRetry returns the journal as a retry.Journal: each attempt's intent is made
// durable before it is sent (retry.Config.Journal) and its outcome recorded after.
func (j *Journal) ForRetry() retry.Journal { return retryJournal{j} }

type retryJournal struct{ j *Journal }

func (r retryJournal) Intend(ctx context.Context, a retry.Info) (string, error) {
	in, err := r.j.Intend(ctx, Dispatch{
		RequestID: a.RequestID, IdempotencyKey: a.IdempotencyKey, Dependency: a.Dependency,
		Tool: a.Tool, Args: a.Args, Attempt: a.Number, PolicyVersion: a.PolicyVersion,
	})
	return in.ID, err
}

func (r retryJournal) Record(ctx context.Context, a retry.Info, c classify.Classification) error {
	return r.j.Finish(ctx, a.IntentID, c)
}

// Reconciler returns a retry.Reconciler backed by the journal (retry.Operation.Reconcile):
// asked about an attempt with an UNKNOWN outcome, it runs the dependency's status
// lookup (ReconcileIntent) and answers from the intent's state. An intent an operator
// approved answers NotApplied, so the operation may be retried; one discarded answers
// Applied, so it is not; one still awaiting the operator answers Unsettled.
func (j *Journal) Reconciler() retry.Reconciler {
	return func(ctx context.Context, a retry.Info) (retry.Settlement, error) {
		if a.IntentID == "" {
			return retry.Unsettled, nil
		}
		in, err := j.ReconcileIntent(ctx, a.IntentID)
		if err != nil {
			return retry.Unsettled, err
		}
		applied, known := replayable(in.State)
		switch {
		case !known:
			return retry.Unsettled, nil
		case applied:
			return retry.Applied, nil
		}
		return retry.NotApplied, nil
	}
}
