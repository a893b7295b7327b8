package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentbreaker/agentbreaker/journal"
)

// JournalOf adapts a dispatch-intent journal to [JournalAdmin], so that Config.Journal
// can list the intents waiting for an operator and approve or discard them. A nil
// journal gives nil, which leaves the journal endpoints off. The adapter holds no state
// of its own and is as safe for concurrent use as the journal.
func JournalOf(j *journal.Journal) JournalAdmin {
	if j == nil {
		return nil
	}
	return journalAdapter{j: j}
}

type journalAdapter struct{ j *journal.Journal }

// Pending lists the intents awaiting an operator, oldest first. Rows that fail the
// journal's checks are listed after them, by ID and problem, so one corrupt row
// neither hides the healthy ones nor disappears from the operator's view.
func (a journalAdapter) Pending(ctx context.Context) ([]Intent, error) {
	list, err := a.j.Pending(ctx)
	var corrupt *journal.CorruptError
	if err != nil && !errors.As(err, &corrupt) {
		return nil, err
	}
	out := make([]Intent, 0, len(list))
	for _, in := range list {
		out = append(out, Intent{
			ID: in.ID, Dependency: in.Dependency, Tool: in.Tool, RequestID: in.RequestID,
			Attempt: in.Attempt, CreatedAt: in.CreatedAt, Summary: summary(in),
		})
	}
	if corrupt != nil {
		for _, r := range corrupt.Records {
			out = append(out, Intent{ID: r.ID, Summary: "corrupt row, not shown: " + r.Problem})
		}
	}
	return out, nil
}

// Approve lets the call behind the intent be sent again.
func (a journalAdapter) Approve(ctx context.Context, id string) error {
	return notFoundAs(a.j.Approve(ctx, id))
}

// Discard closes the intent without sending the call again.
func (a journalAdapter) Discard(ctx context.Context, id string) error {
	return notFoundAs(a.j.Discard(ctx, id))
}

// notFoundAs makes the journal's "not found" one the handler answers with 404.
func notFoundAs(err error) error {
	if err != nil && errors.Is(err, journal.ErrNotFound) {
		return fmt.Errorf("%w (%w)", err, ErrNotFound)
	}
	return err
}

// summary describes an intent for an operator from what the journal keeps: never the
// arguments (they may hold personal data, and are stored only on request), only
// their hash's prefix so that two intents of the same call can be matched by eye.
func summary(in journal.Intent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s, attempt %d", in.Tool, in.Dependency, in.Attempt)
	if in.Outcome != 0 {
		fmt.Fprintf(&b, ", outcome %s", in.Outcome)
		if in.ErrorClass != "" {
			fmt.Fprintf(&b, " (%s)", in.ErrorClass)
		}
	}
	if len(in.ArgsHash) >= 12 {
		fmt.Fprintf(&b, ", arguments %s…", in.ArgsHash[:12])
	}
	if in.Note != "" {
		b.WriteString("; " + in.Note)
	}
	return b.String()
}
