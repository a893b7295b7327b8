// Package plot draws a simulation's results with gonum's plot: one row of panels per
// strategy (breaker state, calls reaching the dependency per 10 s, turn latency), the
// outage shaded, as PNG or SVG.
//
// It is a package of its own so that only programs that draw (the agentbreaker
// command) link the plotting library; package sim does not.
package plot
