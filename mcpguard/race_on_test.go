//go:build race

package mcpguard_test

// raceEnabled is set when the race detector is on, which allocates on its own.
const raceEnabled = true
