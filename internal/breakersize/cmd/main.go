// Command cmd prints what a breaker costs in memory, measured as heap growth with
// each window in a fresh process (package breakersize): it runs itself once per
// window. docs/benchmarks.md quotes its output.
package main

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/agentbreaker/agentbreaker/internal/breakersize"
)

func main() {
	if breakersize.RunChild(os.Stdout) {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rs, err := breakersize.MeasureFresh(func() *exec.Cmd { return exec.Command(exe) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	breakersize.Print(os.Stdout, rs)
}
