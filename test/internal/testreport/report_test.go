package main

import (
	"os"
	"strings"
	"testing"
)

// testdata/stream.json is real go test -json output: a passing package, then one with
// a skipped test and a failed subtest, after a line of test.sh's own.
const wantPlain = `== go test ./... in .
ok  	tj2	0.004s
--- FAIL: TestNested (0.00s)
    b_test.go:3: parent log
    --- FAIL: TestNested/inner (0.00s)
        b_test.go:3: inner boom
FAIL
FAIL	tj	0.004s

1 skipped:
  tj TestSkip: a_test.go:4: no redis at 127.0.0.1:6379 (set AGENTBREAKER_REDIS_ADDR)
`

// The report is plain go test's output (the order of a failed test's lines included;
// plain go test printed the same for this package), then one line per skipped test
// with its reason, and it says the run failed.
func TestReportIsPlainOutputThenSkips(t *testing.T) {
	f, err := os.Open("testdata/stream.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	failed, err := report(f, &b, false)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v: want a failed run", failed, err)
	}
	if b.String() != wantPlain {
		t.Errorf("report:\n%s\nwant:\n%s", b.String(), wantPlain)
	}
}

func TestReportPassingRunWithoutSkips(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.01s\n"}
{"Action":"pass","Package":"p"}
`
	var b strings.Builder
	failed, err := report(strings.NewReader(in), &b, false)
	if err != nil || failed || b.String() != "ok  \tp\t0.01s\n" {
		t.Errorf("failed %v, err %v, report %q", failed, err, b.String())
	}
	// -v prints every test's lines.
	b.Reset()
	if _, err := report(strings.NewReader(in), &b, true); err != nil || !strings.Contains(b.String(), "=== RUN   TestA\n--- PASS: TestA") {
		t.Errorf("-v report %q", b.String())
	}
}

// A build failure fails the run even though no test ran.
func TestReportBuildFailure(t *testing.T) {
	in := `{"ImportPath":"p [p.test]","Action":"build-output","Output":"p/a_test.go:3:1: syntax error\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}
{"Action":"fail","Package":"p"}
`
	var b strings.Builder
	failed, err := report(strings.NewReader(in), &b, false)
	if err != nil || !failed || b.String() != "p/a_test.go:3:1: syntax error\nFAIL\tp [build failed]\n" {
		t.Errorf("failed %v, err %v, report %q", failed, err, b.String())
	}
}
