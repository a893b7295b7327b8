package classify_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

func TestOutcomeString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   classify.Outcome
		want string
	}{
		{name: "zero", in: 0, want: "UNSET"},
		{name: "succeeded", in: classify.Succeeded, want: "SUCCEEDED"},
		{name: "failed before send", in: classify.FailedBeforeSend, want: "FAILED_BEFORE_SEND"},
		{name: "failed", in: classify.Failed, want: "FAILED"},
		{name: "unknown", in: classify.Unknown, want: "UNKNOWN"},
		{name: "out of range", in: 9, want: "Outcome(9)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.in.String())
		})
	}
}

func TestVerdictString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   classify.Verdict
		want string
	}{
		{name: "zero", in: 0, want: "unset"},
		{name: "healthy", in: classify.Healthy, want: "healthy"},
		{name: "counts", in: classify.Counts, want: "counts"},
		{name: "neutral", in: classify.Neutral, want: "neutral"},
		{name: "out of range", in: 7, want: "Verdict(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.in.String())
		})
	}
}

func TestCountsAsFailure(t *testing.T) {
	t.Parallel()
	require.True(t, classify.Classification{Verdict: classify.Counts}.CountsAsFailure())
	require.False(t, classify.Classification{Verdict: classify.Healthy}.CountsAsFailure())
	require.False(t, classify.Classification{Verdict: classify.Neutral}.CountsAsFailure())
	require.False(t, classify.Classification{}.CountsAsFailure())
}
