//go:build race

package otelmetrics_test

// raceEnabled is set when the race detector is on (it allocates, so the allocation
// tests skip).
const raceEnabled = true
