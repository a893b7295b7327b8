package mcpguard

import (
	"time"

	"github.com/agentbreaker/agentbreaker/tooltimeout"
)

// Timeout returns the per-call timeout of the tool set's tools (Config.Timeout, after
// its default), or 0 when their calls are not bounded. It makes a Toolset a
// tooltimeout.BoundedToolset: tooltimeout.NewTurn checks it against the turn deadline
// at construction, before the server has been listed.
func (g *Toolset) Timeout() time.Duration { return max(g.timeout, 0) }

var _ tooltimeout.BoundedToolset = (*Toolset)(nil)
