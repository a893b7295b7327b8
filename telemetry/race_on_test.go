//go:build race

package telemetry_test

// raceEnabled is set when the race detector is on: the series-budget test then drives
// 10,000 invented names instead of 100,000 (under -race the full run takes minutes).
const raceEnabled = true
