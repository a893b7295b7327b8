package classify_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

// requireValid checks the promises every default classification keeps,
// whatever the input: a known class, set outcome and verdict, no negative
// delay, and "none" exactly for successes.
func requireValid(t testing.TB, c classify.Classification) {
	t.Helper()
	require.True(t, c.Class.Known(), "class %q is not a constant", c.Class)
	require.True(t, c.Outcome >= classify.Succeeded && c.Outcome <= classify.Unknown, "outcome %v", c.Outcome)
	require.True(t, c.Verdict >= classify.Healthy && c.Verdict <= classify.Neutral, "verdict %v", c.Verdict)
	require.GreaterOrEqual(t, c.RetryAfter, 0*c.RetryAfter, "negative RetryAfter")
	require.Equal(t, c.Outcome == classify.Succeeded, c.Class == classify.ClassNone, "success and class none go together: %+v", c)
	if c.Outcome == classify.Succeeded {
		require.Equal(t, classify.Healthy, c.Verdict)
	}
	if c.Retryable {
		require.Equal(t, classify.Counts, c.Verdict, "only failures that count are transient: %+v", c)
	}
}

// with returns the default classification of class with the fields a test
// cares about changed.
func with(class classify.Class, edit func(*classify.Classification)) classify.Classification {
	c := classify.ForClass(class)
	if edit != nil {
		edit(&c)
	}
	return c
}
