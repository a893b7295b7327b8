package telemetry

// Keys of the slog records. They are stable: log queries and alerts built on them keep
// working across versions.
const (
	KeyDependency        = "dependency"
	KeyTool              = "tool"
	KeyRequestID         = "request_id"       // the adk-go invocation ID unless the caller gave one
	KeyFunctionCallID    = "function_call_id" // the model's function call ID, inside tool callbacks
	KeyAttempt           = "attempt"
	KeyOutcome           = "outcome"
	KeyErrorClass        = "error_class"
	KeyElapsedMS         = "elapsed_ms"
	KeyBreakerState      = "breaker_state"
	KeyPolicyVersion     = "policy_version"
	KeyProbe             = "probe"
	KeyRetryAfterMS      = "retry_after_ms"
	KeyFrom              = "from"
	KeyTo                = "to"
	KeyCause             = "cause"
	KeyReason            = "reason"
	KeyGeneration        = "generation"
	KeyHealthProbe       = "health_probe" // a breaker transition made by the dependency's health probe
	KeyWindowCalls       = "window_calls"
	KeyWindowFailedCalls = "window_failed_calls"
	KeyReopenAt          = "reopen_at"
	KeyModel             = "model"
	KeyRegion            = "region"
)
