package classify

import "google.golang.org/genai"

// FinishReason classifies how a model ended a response that arrived
// without an error. Content filters (safety, blocklists, prohibited
// content, personal data, recitation) give [ClassSafetyBlock]: Failed,
// because the caller got no usable answer, but Healthy and not retryable,
// because the model endpoint worked and would answer the same way again.
// Every other reason, including an empty one, MAX_TOKENS and
// MALFORMED_FUNCTION_CALL, is a success as far as a breaker is concerned.
func FinishReason(reason genai.FinishReason) Classification {
	switch reason {
	case genai.FinishReasonSafety, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII,
		genai.FinishReasonRecitation, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return ForClass(ClassSafetyBlock)
	}
	return ForClass(ClassNone)
}
