package throttle

import "context"

type priorityKey struct{}

// WithPriority returns a context whose calls carry priority p, overriding the priority
// the dependency map gives their tools (package callbacks reads it from the context
// handed to adk-go's runner).
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityFrom returns the priority WithPriority set, if any.
func PriorityFrom(ctx context.Context) (Priority, bool) {
	p, ok := ctx.Value(priorityKey{}).(Priority)
	return p, ok
}
