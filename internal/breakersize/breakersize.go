// Package breakersize measures what a breaker costs in memory: the heap growth over
// many breakers built with breaker.MustNew, in the process that calls it. Run it in a
// fresh process (its command, or a test binary re-executed for it), so that nothing
// else the process did is counted.
package breakersize

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/agentbreaker/agentbreaker/breaker"
)

// N is how many breakers a measurement builds: enough that the shared parts (the
// stripe arena's chunks, the runtime's spans) are spread over all of them.
const N = 10_000

// Result is one window's measurement, in bytes per breaker.
type Result struct {
	Window string  // what the row measures
	Built  float64 // heap growth per breaker once built
	Called float64 // heap growth per breaker after one call each (Allow, then Success)
}

// Windows are the policies measured: the default (time-based) window and a 100-call
// count window.
var Windows = []struct {
	Name   string
	Policy breaker.Policy
}{
	{"default (1m time window, 10 buckets)", breaker.Policy{}},
	{"count window (100 calls)", breaker.Policy{WindowCalls: 100}},
}

// Measure builds N breakers with pol and reports the heap growth per breaker, after
// they are built and after one call each. The names are allocated before the first
// reading, and the heap is collected before each reading, so only what the breakers
// hold is counted.
func Measure(name string, pol breaker.Policy) Result {
	names := make([]string, N)
	for i := range names {
		names[i] = "dependency-" + strconv.Itoa(i)
	}
	bs := make([]*breaker.Breaker, N)
	base := heap()
	for i := range bs {
		bs[i] = breaker.MustNew(breaker.Config{Name: names[i], Policy: pol})
	}
	built := heap()
	for _, b := range bs {
		p, err := b.Allow()
		if err != nil {
			panic(err)
		}
		p.Success()
	}
	called := heap()
	runtime.KeepAlive(bs)
	runtime.KeepAlive(names)
	return Result{Window: name, Built: float64(built-base) / N, Called: float64(called-base) / N}
}

// heap is the live heap after a full collection.
func heap() uint64 {
	runtime.GC()
	runtime.GC() // a second cycle frees what the first one's finalizers released
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// ChildEnv names the environment variable that makes a process a measuring child:
// its value is the index in Windows of the window to measure.
const ChildEnv = "AGENTBREAKER_BREAKERSIZE_WINDOW"

// childPrefix starts the line a child prints its Result on, so that a parent can find
// it among whatever else the process prints (a test binary's PASS).
const childPrefix = "breakersize result: "

// RunChild measures the window ChildEnv names and prints the Result, when ChildEnv is
// set, and reports whether it did. A command or a test calls it first thing.
func RunChild(w io.Writer) bool {
	v, ok := os.LookupEnv(ChildEnv)
	if !ok {
		return false
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 || i >= len(Windows) {
		fmt.Fprintf(w, "breakersize: %s=%q: not a window index (0 to %d)\n", ChildEnv, v, len(Windows)-1)
		return true
	}
	b, _ := json.Marshal(Measure(Windows[i].Name, Windows[i].Policy))
	fmt.Fprintf(w, "%s%s\n", childPrefix, b)
	return true
}

// MeasureFresh measures every window, each in a fresh process that cmd starts (this
// program again, or a test binary told to run only the test that calls RunChild);
// ChildEnv is added to the command's environment.
func MeasureFresh(cmd func() *exec.Cmd) ([]Result, error) {
	var out []Result
	for i := range Windows {
		c := cmd()
		c.Env = append(os.Environ(), ChildEnv+"="+strconv.Itoa(i))
		b, err := c.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("breakersize: window %d: %w\n%s", i, err, b)
		}
		var r Result
		found := false
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, childPrefix); ok {
				if err := json.Unmarshal([]byte(rest), &r); err != nil {
					return nil, fmt.Errorf("breakersize: window %d: %w", i, err)
				}
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("breakersize: window %d: the child printed no result:\n%s", i, b)
		}
		out = append(out, r)
	}
	return out, nil
}

// Print writes rs as the table the docs quote, in bytes per breaker rounded to 8 (the
// allocator's granule; a run differs from the next by a byte or two of the runtime's
// own allocations spread over the N breakers).
func Print(w io.Writer, rs []Result) {
	fmt.Fprintf(w, "heap growth per breaker: %s breakers built with breaker.MustNew, each window in a fresh process\n", commas(N))
	fmt.Fprintf(w, "%-38s %8s %20s\n", "window", "built", "after one call each")
	for _, r := range rs {
		fmt.Fprintf(w, "%-38s %8s %20s\n", r.Window, Bytes(Round8(r.Built)), Bytes(Round8(r.Called)))
	}
}

// Round8 rounds v to the nearest multiple of 8.
func Round8(v float64) float64 { return math.Round(v/8) * 8 }

// Bytes formats a size rounded to whole bytes, "1,080 B".
func Bytes(v float64) string { return commas(int64(math.Round(v))) + " B" }

// commas writes n with a comma between thousands, as the pages write numbers.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
