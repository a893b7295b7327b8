//go:build !race

package callbacks_test

// raceEnabled is set when the race detector is on; the soak test runs fewer turns then.
const raceEnabled = false
