package callbacks

// SetInvocationDraw replaces c's throttle draw, a hash of each invocation's ID, with f,
// before c serves a call: adk-go's invocation IDs are random, so a test that needs a
// run through the runner to repeat gives the draws itself.
func SetInvocationDraw(c *Callbacks, f func(invocationID string) uint64) { c.drawOf = f }
