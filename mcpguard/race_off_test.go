//go:build !race

package mcpguard_test

const raceEnabled = false
