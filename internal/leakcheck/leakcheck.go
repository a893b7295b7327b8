// Package leakcheck fails a test binary whose tests leave goroutines running. It
// replaces go.uber.org/goleak in this module so that no test-only module reaches a
// user's module graph; it does the one thing the tests used goleak for.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// clockPackage's goroutines are the coarse clock's ticker, which runs while something
// reads the clock and stops by itself a second later: not a leak.
const clockPackage = "github.com/agentbreaker/agentbreaker/clock."

// Main runs the tests and, when they pass, fails the binary if goroutines they
// started are still running after a grace period (goroutines take a moment to wind
// down after a test's cleanup). ignore lists more entry functions, by prefix, whose
// goroutines are not leaks.
func Main(m *testing.M, ignore ...string) {
	code := m.Run()
	if code == 0 {
		if leaked := wait(5*time.Second, ignore); len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "leakcheck: %d goroutine(s) outlived the tests:\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// wait polls until no leaked goroutine is left or the grace period is over, and
// returns the stacks still leaked.
func wait(grace time.Duration, ignore []string) []string {
	deadline := time.Now().Add(grace)
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		leaked := Leaked(ignore...)
		if len(leaked) == 0 || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(delay)
	}
}

// Leaked returns the stacks of the goroutines that are neither the caller, nor the
// runtime's or the testing package's own, nor the coarse clock's ticker, nor started
// by a function whose name begins with one of ignore.
func Leaked(ignore ...string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := strings.Split(string(buf), "\n\n")
	var leaked []string
	for i, s := range stacks {
		if i == 0 || !strings.HasPrefix(s, "goroutine ") { // stacks[0] is the caller's
			continue
		}
		if !expected(s, ignore) {
			leaked = append(leaked, s)
		}
	}
	return leaked
}

// expected reports whether a goroutine's stack belongs to something that outlives the
// tests on purpose.
func expected(stack string, ignore []string) bool {
	entry := entryFunction(stack)
	switch {
	case strings.HasPrefix(entry, clockPackage):
		return true
	case entry == "main.main", strings.HasPrefix(entry, "testing."), strings.HasPrefix(entry, "runtime."),
		strings.HasPrefix(entry, "os/signal."), strings.HasPrefix(entry, "runtime/trace."):
		return true
	}
	for _, p := range ignore {
		if strings.HasPrefix(entry, p) {
			return true
		}
	}
	return false
}

// entryFunction returns the function a goroutine started in: the last frame of its
// stack (the line before "created by", if any).
func entryFunction(stack string) string {
	lines := strings.Split(strings.TrimSpace(stack), "\n")
	last := ""
	for i := 1; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "created by ") {
			break
		}
		if !strings.HasPrefix(l, "\t") {
			last = l
		}
	}
	if p := strings.LastIndex(last, "("); p > 0 && strings.HasSuffix(last, ")") {
		last = last[:p]
	}
	return last
}
