package tooltimeout

import (
	"fmt"
	"time"

	"google.golang.org/adk/v2/tool"
)

// BoundedToolset is a tool set whose every tool call is bounded by one per-call
// timeout that is known before its tools are listed. adk-go lists a tool set's tools
// only when a turn starts, so [NewTurn] cannot reach them through TurnConfig.Tools; it
// checks the timeout of each tool set in TurnConfig.Toolsets that implements this
// interface instead (mcpguard.Toolset does).
type BoundedToolset interface {
	tool.Toolset
	// Timeout is the longest one call of any of the tool set's tools may take; 0 or
	// negative means its calls are not bounded, and there is nothing to check.
	Timeout() time.Duration
}

// checkToolsets checks the timeout of every BoundedToolset in sets against the turn.
func checkToolsets(sets []tool.Toolset, turn time.Duration) error {
	for i, s := range sets {
		if s == nil {
			return fmt.Errorf("tooltimeout: TurnConfig.Toolsets[%d] = nil", i)
		}
		b, ok := s.(BoundedToolset)
		if !ok || b.Timeout() <= 0 {
			continue
		}
		if err := (Layers{ToolTimeout: b.Timeout(), Turn: turn}).Validate(); err != nil {
			return fmt.Errorf("TurnConfig.Toolsets[%d] (tool set %q, per-call timeout %s) against TurnConfig.Timeout %s: %w", i, s.Name(), b.Timeout(), turn, err)
		}
	}
	return nil
}
