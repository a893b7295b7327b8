// Package plot draws a simulation's results with gonum's plot, for a postmortem: a
// title and a legend (the outage band and each line), then one row of panels per
// strategy (breaker state, calls reaching the dependency per 10 s, turn latency), each
// axis labelled with its unit and the x axis with the time zone, one y scale down each
// column so rows compare, text of 11 pt or more, as PNG or SVG.
//
// It is a package of its own so that only programs that draw (the agentbreaker
// command) link the plotting library; package sim does not.
package plot
