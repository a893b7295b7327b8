package main

import (
	"bytes"
	"strings"
	"testing"
)

// Each flag of model-retries changes what it prints.
func TestModelRetriesFlags(t *testing.T) {
	out := func(args ...string) string {
		t.Helper()
		var o, e bytes.Buffer
		if code := run(append([]string{"model-retries"}, args...), &o, &e); code != 0 {
			t.Fatalf("exit %d: %s", code, e.String())
		}
		return o.String()
	}
	base := out("-turns", "20")
	if !strings.Contains(base, "openai-go defaults (2 retries)") || !strings.Contains(base, "failover owns retries") {
		t.Fatalf("rows missing:\n%s", base)
	}
	for _, args := range [][]string{
		{"-turns", "21"}, {"-turns", "20", "-every", "7s"}, {"-turns", "20", "-status", "500"},
		{"-turns", "20", "-status", "429", "-retry-after", "40s"}, {"-turns", "20", "-deadline", "1s"},
		{"-turns", "20", "-seed", "7"}, {"-turns", "20", "-json"},
	} {
		if got := out(args...); got == base {
			t.Errorf("%v printed the same as the defaults", args)
		}
	}
	var o, e bytes.Buffer
	if code := run([]string{"model-retries", "-status", "200"}, &o, &e); code != 2 || !strings.Contains(e.String(), "Status 200") {
		t.Errorf("bad status: exit %d, %q", code, e.String())
	}
}
