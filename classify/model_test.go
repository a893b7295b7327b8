package classify_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/classify"
)

func TestFinishReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		reason genai.FinishReason
		want   classify.Class
	}{
		{name: "empty", reason: "", want: classify.ClassNone},
		{name: "stop", reason: genai.FinishReasonStop, want: classify.ClassNone},
		{name: "max tokens", reason: genai.FinishReasonMaxTokens, want: classify.ClassNone},
		{name: "malformed function call", reason: genai.FinishReasonMalformedFunctionCall, want: classify.ClassNone},
		{name: "unknown future reason", reason: "SOMETHING_NEW", want: classify.ClassNone},
		{name: "safety", reason: genai.FinishReasonSafety, want: classify.ClassSafetyBlock},
		{name: "blocklist", reason: genai.FinishReasonBlocklist, want: classify.ClassSafetyBlock},
		{name: "prohibited content", reason: genai.FinishReasonProhibitedContent, want: classify.ClassSafetyBlock},
		{name: "spii", reason: genai.FinishReasonSPII, want: classify.ClassSafetyBlock},
		{name: "recitation", reason: genai.FinishReasonRecitation, want: classify.ClassSafetyBlock},
		{name: "image safety", reason: genai.FinishReasonImageSafety, want: classify.ClassSafetyBlock},
		{name: "image prohibited", reason: genai.FinishReasonImageProhibitedContent, want: classify.ClassSafetyBlock},
		{name: "image recitation", reason: genai.FinishReasonImageRecitation, want: classify.ClassSafetyBlock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify.FinishReason(tt.reason)
			require.Equal(t, classify.ForClass(tt.want), got)
			require.False(t, got.CountsAsFailure(), "a filtered answer proves the model endpoint works")
		})
	}
}
