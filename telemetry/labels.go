package telemetry

import (
	"log/slog"

	"github.com/agentbreaker/agentbreaker/telemetry/internal/bound"
)

// otherLabel replaces label values past the limit, and unknownLabel an empty value
// where one is required.
const (
	otherLabel   = bound.Other
	unknownLabel = bound.Unknown
)

// labelGuard bounds the distinct values of one label (bound.Guard, which the
// OpenTelemetry adapter shares, so both paths cap and fold alike).
type labelGuard struct{ g *bound.Guard }

func newLabelGuard(name string, max int, log *slog.Logger) *labelGuard {
	return &labelGuard{g: bound.NewGuard(name, max, log)}
}

// newErrorClassGuard and newCauseGuard bound error_class and cause, whose values
// include the library's own bounded set (classify's classes, modelfailover's causes):
// those pass outside the cap (bound.NewFixedGuard).
func newErrorClassGuard(max int, log *slog.Logger) *labelGuard {
	return &labelGuard{g: bound.NewFixedGuard("error_class", max, log, bound.ErrorClasses())}
}

func newCauseGuard(max int, log *slog.Logger) *labelGuard {
	return &labelGuard{g: bound.NewFixedGuard("cause", max, log, bound.Causes())}
}

// value returns v, or "other" once the label holds max other values. v is sanitised
// first (sanitizeLabel): the Prometheus client refuses invalid UTF-8.
func (g *labelGuard) value(v string) string { return g.g.Value(v) }

// required is value for a label that must not be empty.
func (g *labelGuard) required(v string) string { return g.g.Required(v) }
