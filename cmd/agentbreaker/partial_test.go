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

// -by-priority runs both shapes of a partial outage: it needs -partial and no -shape.
func TestSimulateByPriorityFlags(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "-by-priority"},
		{"simulate", "-by-priority", "-partial", "0.6", "-shape", "capacity"},
	} {
		code, _, errOut := runCmd(t, args...)
		if code == 0 || !strings.Contains(errOut, "-by-priority") {
			t.Fatalf("%v: exit %d, %q", args, code, errOut)
		}
	}
	_, out, _ := runCmd(t, "simulate", "-partial", "0.6", "-by-priority")
	for _, want := range []string{"low shed", "capacity", "load-independent"} {
		if !strings.Contains(out, want) {
			t.Fatalf("no %q in\n%s", want, out)
		}
	}
}
