package depfile

import (
	"errors"
	"strings"
	"time"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
)

// Adaptive is adaptivelimit.Config on disk: an `adaptive:` block under a dependency
// or a model turns its adaptive concurrency limit on (an empty block: the defaults).
// Absent fields take the limiter's defaults.
type Adaptive struct {
	MinLimit       int     `json:"min_limit" yaml:"min_limit"`
	MaxLimit       int     `json:"max_limit" yaml:"max_limit"`
	InitialLimit   int     `json:"initial_limit" yaml:"initial_limit"`
	Tolerance      float64 `json:"tolerance" yaml:"tolerance"`
	UpdateInterval string  `json:"update_interval" yaml:"update_interval"`
	MinSamples     int     `json:"min_samples" yaml:"min_samples"`
	NoLoadInterval string  `json:"no_load_interval" yaml:"no_load_interval"`
}

// adaptiveFields maps adaptivelimit.Config's field names to the file's.
var adaptiveFields = map[string]string{
	"MinLimit": "min_limit", "MaxLimit": "max_limit", "InitialLimit": "initial_limit", "Tolerance": "tolerance",
	"UpdateInterval": "update_interval", "MinSamples": "min_samples", "NoLoadInterval": "no_load_interval",
}

// config converts an adaptive block; a value that cannot work gives its problem, in
// the file's terms.
func (fa *Adaptive) config() (*adaptivelimit.Config, *throttleProblem) {
	if fa == nil {
		return nil, nil
	}
	c := adaptivelimit.Config{MinLimit: fa.MinLimit, MaxLimit: fa.MaxLimit, InitialLimit: fa.InitialLimit, Tolerance: fa.Tolerance, MinSamples: fa.MinSamples}
	for _, dur := range []struct {
		key, in string
		out     *time.Duration
	}{{"update_interval", fa.UpdateInterval, &c.UpdateInterval}, {"no_load_interval", fa.NoLoadInterval, &c.NoLoadInterval}} {
		if dur.in == "" {
			continue
		}
		v, err := time.ParseDuration(dur.in)
		if err != nil || v <= 0 {
			return nil, &throttleProblem{dur.key, dur.in, `want a positive duration such as "500ms"`}
		}
		*dur.out = v
	}
	if _, err := adaptivelimit.New(c); err != nil {
		var ce *adaptivelimit.ConfigError
		if errors.As(err, &ce) {
			if key, ok := adaptiveFields[ce.Field]; ok {
				return nil, &throttleProblem{key, ce.Value, ce.Problem}
			}
		}
		return nil, &throttleProblem{"", nil, strings.TrimPrefix(err.Error(), "adaptivelimit: ")}
	}
	return &c, nil
}

// checkAdaptive records the problem of an adaptive block at where.adaptive.
func (d *Document) checkAdaptive(where string, fa *Adaptive) {
	if _, p := fa.config(); p != nil {
		if p.key == "" {
			d.at(where+".adaptive", nil, "%s", p.message)
		} else {
			d.at(where+".adaptive."+p.key, p.value, "%s", p.message)
		}
	}
}
