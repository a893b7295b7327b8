// Command agentbreaker helps choose and check circuit-breaker policies before an
// incident does it for you.
//
//	agentbreaker simulate [flags]   replay an outage in virtual time, strategies side by side
//	agentbreaker replay [flags] FILE  run recorded calls through a policy, and sweep thresholds
//	agentbreaker lint FILE...       check dependency files and their layered timeouts
//
// Run a subcommand with -h for its flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errProblems is returned by a subcommand that printed its problems already.
var errProblems = errors.New("problems found")

const usage = `usage: agentbreaker <command> [flags]

commands:
  simulate   replay an outage in virtual time through agentbreaker and the strategies it replaces
  replay     run recorded calls (slog JSON or CSV) through a policy; -sweep tries a grid of thresholds
  lint       check dependency files (YAML or JSON) and their layered timeouts

Run "agentbreaker <command> -h" for a command's flags.
`

// run is the whole command, for tests: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "simulate", "sim":
		err = simulate(args[1:], stdout, stderr)
	case "replay":
		err = replay(args[1:], stdout, stderr)
	case "lint":
		err = lint(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "agentbreaker: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errProblems):
		return 1
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(stderr, "agentbreaker %s: %v\n", args[0], err)
		return 1
	}
}

// errUsage marks a flag error the flag package already printed.
var errUsage = errors.New("usage")

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}
