package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	verbose := flag.Bool("v", false, "print every test's output, as go test -v does")
	flag.Parse()
	failed, err := report(os.Stdin, os.Stdout, *verbose)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

// event is one line of go test -json (cmd/test2json's TestEvent).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Output     string
}

// skip is a skipped test and its reason.
type skip struct {
	pkg, test, reason string
}

// report copies a go test -json stream to w as plain go test output and lists the
// skipped tests at the end. It reports whether anything failed.
func report(r io.Reader, w io.Writer, verbose bool) (failed bool, err error) {
	out := bufio.NewWriter(w)
	defer out.Flush()
	rp := &reporter{out: out, verbose: verbose, logs: map[testKey][]string{}, nested: map[testKey][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
			fmt.Fprintln(out, line) // not go test's: pass it through
			continue
		}
		rp.handle(e)
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	if len(rp.skips) > 0 {
		fmt.Fprintf(out, "\n%d skipped:\n", len(rp.skips))
		for _, s := range rp.skips {
			fmt.Fprintf(out, "  %s %s: %s\n", s.pkg, s.test, s.reason)
		}
	}
	return rp.failed, nil
}

// testKey names one test of one package.
type testKey struct{ pkg, test string }

// reporter is report's state while it reads the stream.
type reporter struct {
	out     *bufio.Writer
	verbose bool
	logs    map[testKey][]string // a running test's output, "=== " lines left out
	nested  map[testKey][]string // failed subtests' output, printed under their parent
	skips   []skip
	failed  bool
}

// handle writes or keeps what one event of the stream says.
func (rp *reporter) handle(e event) {
	out := rp.out
	k := testKey{e.Package, e.Test}
	switch {
	case e.Action == "build-output":
		out.WriteString(e.Output)
	case e.Action == "build-fail":
		rp.failed = true
	case e.Test == "":
		// Package lines: "ok  pkg 0.1s", "FAIL pkg", "? pkg [no test files]", a
		// panic outside any test. Plain go test leaves out the binary's PASS.
		if e.Action == "output" && e.Output != "PASS\n" {
			out.WriteString(e.Output)
		}
		if e.Action == "fail" {
			rp.failed = true
		}
	case e.Action == "output":
		if rp.verbose {
			out.WriteString(e.Output)
			return
		}
		if t := strings.TrimSpace(e.Output); !strings.HasPrefix(t, "=== ") {
			rp.logs[k] = append(rp.logs[k], e.Output)
		}
	case e.Action == "pass", e.Action == "skip", e.Action == "fail":
		rp.ended(e, k)
	}
}

// ended handles the end of test k: a skip is listed for the end, and a failure's
// output is written, or kept under its parent when it is a subtest.
func (rp *reporter) ended(e event, k testKey) {
	lines := rp.logs[k]
	delete(rp.logs, k)
	sub := rp.nested[k]
	delete(rp.nested, k)
	switch e.Action {
	case "skip":
		rp.skips = append(rp.skips, skip{e.Package, e.Test, reason(lines)})
	case "fail":
		rp.failed = true
		if rp.verbose {
			return
		}
		// go test prints the --- FAIL line first, then what the test logged,
		// then its failed subtests.
		block := headerFirst(lines)
		block = append(block, sub...)
		if i := strings.LastIndexByte(e.Test, '/'); i >= 0 {
			// test2json drops a subtest's indentation; go test indents it
			// under its parent.
			p := testKey{e.Package, e.Test[:i]}
			for _, l := range block {
				rp.nested[p] = append(rp.nested[p], "    "+l)
			}
			return
		}
		for _, l := range block {
			rp.out.WriteString(l)
		}
	}
}

// headerFirst moves the test's "--- FAIL" line (its last) before its log lines.
func headerFirst(lines []string) []string {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "--- ") {
			out := append([]string{lines[i]}, lines[:i]...)
			return append(out, lines[i+1:]...)
		}
	}
	return lines
}

// reason is what a skipped test logged, on one line: "redis_test.go:20: no Redis
// at 127.0.0.1:6379".
func reason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, "; ")
}
