package admin

import (
	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// AdaptiveStatus is a dependency's adaptive concurrency limit (package adaptivelimit)
// in the state document.
type AdaptiveStatus struct {
	// Limit is the limit in force; MinLimit and MaxLimit its bounds. AtFloor is set
	// while the limit is MinLimit.
	Limit    int  `json:"limit"`
	MinLimit int  `json:"min_limit"`
	MaxLimit int  `json:"max_limit"`
	AtFloor  bool `json:"at_floor"`
	// InFlight is how many of this replica's calls hold a place now.
	InFlight int `json:"in_flight"`
	// NoLoadSeconds is the measured no-load latency (0 until measured); Measuring is
	// set while a new measurement holds the limit at half.
	NoLoadSeconds float64 `json:"no_load_seconds"`
	Measuring     bool    `json:"measuring"`
	// Refused counts the calls it refused over its life, by priority name.
	Refused map[string]uint64 `json:"refused"`
}

// adaptiveStatus reads the adaptive limit of dependency (or model endpoint) name, if
// the breaker source has one (*dependencymap.Map does).
func (h *Handler) adaptiveStatus(name string) *AdaptiveStatus {
	src, ok := h.breakers.(interface {
		Limiter(string) *adaptivelimit.Limiter
	})
	if !ok {
		return nil
	}
	l := src.Limiter(name)
	if l == nil {
		return nil
	}
	lo, hi := l.Bounds()
	st := &AdaptiveStatus{Limit: l.Limit(), MinLimit: lo, MaxLimit: hi, AtFloor: l.AtFloor(), InFlight: l.InFlight(),
		NoLoadSeconds: l.NoLoad().Seconds(), Measuring: l.Measuring(), Refused: map[string]uint64{}}
	for _, pr := range throttle.Priorities() {
		st.Refused[pr.String()] = l.Refused(pr)
	}
	return st
}
