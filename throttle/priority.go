package throttle

import (
	"fmt"
	"strings"
)

// Priority says how much a call matters. The zero value is [Normal].
type Priority uint8

// The priorities, from the first shed to the last.
const (
	// Low: nice to have (a suggestion, a prefetch); shed first.
	Low Priority = iota + 1
	// Normal: the default.
	Normal
	// High: the turn is much worse without it.
	High
	// Critical: the user's request fails without it; shed last.
	Critical
)

const numPriorities = int(Critical) + 1

var priorityNames = [numPriorities]string{"normal", "low", "normal", "high", "critical"}

// String returns the lower-case name, also used as the metric label and in payloads.
func (p Priority) String() string {
	if int(p) < numPriorities {
		return priorityNames[p]
	}
	return fmt.Sprintf("Priority(%d)", uint8(p))
}

// Valid reports whether p is the zero value or one of the constants.
func (p Priority) Valid() bool { return int(p) < numPriorities }

// Priorities returns the four priorities, lowest first.
func Priorities() []Priority { return []Priority{Low, Normal, High, Critical} }

// ParsePriority reads a priority name ("low", "normal", "high", "critical"; case and
// surrounding spaces ignored). The empty string is Normal.
func ParsePriority(s string) (Priority, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "normal":
		return Normal, nil
	case "low":
		return Low, nil
	case "high":
		return High, nil
	case "critical":
		return Critical, nil
	}
	return 0, fmt.Errorf("throttle: unknown priority %q (want low, normal, high or critical)", s)
}

// Norm returns p, or Normal for the zero value (or an invalid value).
func (p Priority) Norm() Priority { return p.norm() }

// norm maps the zero value to Normal and anything invalid to Normal too: a priority is
// only a hint, and an out-of-range one must not index past the tables.
func (p Priority) norm() Priority {
	if p == 0 || int(p) >= numPriorities {
		return Normal
	}
	return p
}
