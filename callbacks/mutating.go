package callbacks

// Mutating reports whether tool is one of Config.MutatingTools: a tool with side
// effects, whose call must not be sent twice and whose UNKNOWN outcome is never
// replayed automatically. Guards below the plugin (an MCP transport, for one) ask it
// so that one list decides for every layer.
func (c *Callbacks) Mutating(tool string) bool { return c.mutating[tool] }
