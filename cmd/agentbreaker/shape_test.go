package main

import (
	"strings"
	"testing"
)

// -shape picks the partial outage's shape; a shape it does not know is refused,
// naming the value.
func TestSimulateShapeFlag(t *testing.T) {
	_, capacity, _ := runCmd(t, "simulate", "-partial", "0.6")
	code, random, errOut := runCmd(t, "simulate", "-partial", "0.6", "-shape", "load-independent")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if capacity == random || !strings.Contains(random, "at any load") {
		t.Fatalf("-shape load-independent did not change the run:\n%s", random)
	}
	code, _, errOut = runCmd(t, "simulate", "-partial", "0.6", "-shape", "flaky")
	if code == 0 || !strings.Contains(errOut, "shape = flaky") {
		t.Fatalf("-shape flaky: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCmd(t, "simulate", "-shape", "load-independent")
	if code == 0 || !strings.Contains(errOut, "-partial") {
		t.Fatalf("-shape without -partial: exit %d, %q", code, errOut)
	}
}
