package breaker

// hookPoint names a point between two steps of a lock-free path, where a test built
// with the breakerhooks tag can pause the goroutine that reached it.
type hookPoint uint8

const (
	// hookSuccessAfterGenCheck: a success checked its permit's generation and has not
	// counted itself yet.
	hookSuccessAfterGenCheck hookPoint = iota
	// hookTransitionBeforePublish: a transition took (and retagged) the striped
	// counters and has not published the new generation yet.
	hookTransitionBeforePublish
	// hookRotateBeforeFold: the window decided to slide and has not folded the striped
	// counters into it yet.
	hookRotateBeforeFold
	// hookRejectAfterLoad: an open breaker's fast path loaded its state and has not
	// compared the reopen time yet.
	hookRejectAfterLoad
	hookPoints
)
