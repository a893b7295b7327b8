package telemetry

// Keys of the slog records. They are stable: log queries and alerts built on them keep
// working across versions.
const (
	keyDependency        = "dependency"
	keyTool              = "tool"
	keyRequestID         = "request_id"       // the adk-go invocation ID unless the caller gave one
	keyFunctionCallID    = "function_call_id" // the model's function call ID, inside tool callbacks
	keyAttempt           = "attempt"
	keyOutcome           = "outcome"
	keyErrorClass        = "error_class"
	keyElapsedMS         = "elapsed_ms"
	keyBreakerState      = "breaker_state"
	keyPolicyVersion     = "policy_version"
	keyProbe             = "probe"
	keyRetryAfterMS      = "retry_after_ms"
	keyFrom              = "from"
	keyTo                = "to"
	keyCause             = "cause"
	keyReason            = "reason"
	keyGeneration        = "generation"
	keyHealthProbe       = "health_probe" // a breaker transition made by the dependency's health probe
	keyWindowCalls       = "window_calls"
	keyWindowFailedCalls = "window_failed_calls"
	keyReopenAt          = "reopen_at"
	keyModel             = "model"
	keyRegion            = "region"
)
