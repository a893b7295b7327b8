package main

import (
	"strings"
	"testing"
)

func TestSimulatePartialFlags(t *testing.T) {
	_, a, _ := runCmd(t, "simulate", "-partial", "0.6")
	_, b, _ := runCmd(t, "simulate", "-partial", "0.6", "-seed", "2")
	if a == b {
		t.Fatal("-seed did not change the partial outage")
	}
	for _, bad := range []string{"x", "0", "1.5", "0.5,,0.6"} {
		code, _, errOut := runCmd(t, "simulate", "-partial", bad)
		if code == 0 || !strings.Contains(errOut, "-partial") {
			t.Fatalf("-partial %s: exit %d, %q", bad, code, errOut)
		}
	}
}
