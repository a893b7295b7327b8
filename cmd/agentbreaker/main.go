// Command agentbreaker helps choose and check circuit-breaker policies before an
// incident does it for you.
//
//	agentbreaker simulate [flags]   replay an outage in virtual time, strategies side by side
//	agentbreaker replay [flags] FILE  run recorded calls through a policy, and sweep thresholds
//	agentbreaker lint FILE...       check dependency files and their layered timeouts
//	agentbreaker tune [flags] FILE  recommend policies from recorded calls, and write a dependency file
//	agentbreaker generate [flags]   write a month of recorded calls with outages of known shapes
//
// Run a subcommand with -h for its flags. Exit status: 0 when all is well, 1 for
// problems found or an error, 2 for a usage error (a bad flag, a missing argument).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errProblems is returned by a subcommand that printed its problems already.
var errProblems = errors.New("problems found")

// errUsage is what every usage error matches with errors.Is.
var errUsage = errors.New("usage")

// usageError is a usage error: a bad flag or argument. The command prints it on one
// line with how to get help, and exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == errUsage }

// usageErrorf returns a usage error. Subcommands return it for a missing or extra
// argument, so that every one exits 2 with the same one-line message.
func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

const usage = `usage: agentbreaker <command> [flags]

commands:
  simulate   replay an outage in virtual time through agentbreaker and the strategies it replaces
  replay     run recorded calls (slog JSON or CSV) through a policy; -sweep tries a grid of thresholds
  lint       check dependency files (YAML or JSON) and their layered timeouts
  tune       recommend each dependency's policy from recorded calls, checked on outages it did not fit
  generate   write recorded calls (a month, with outages of five shapes) for tune and replay
  model-retries  a failing OpenAI-compatible route: openai-go's own retries against the failover's

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
	case "tune":
		err = tune(args[1:], stdout, stderr)
	case "generate":
		err = generate(args[1:], stdout, stderr)
	case "model-retries":
		err = modelRetries(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "agentbreaker: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	return exitCode(err, "agentbreaker "+args[0], stderr)
}

// exitCode prints err (unless its command printed it already) and returns the exit
// status: 0, 1 for problems or an error, 2 for a usage error.
func exitCode(err error, cmd string, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errProblems):
		return 1
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "%s: %v (run %q for help)\n", cmd, err, cmd+" -h")
		return 2
	default:
		printError(stderr, cmd, err)
		return 1
	}
}

// printError prints an error in the user's terms: a dependency file's problems one per
// line, each with its file, line and column; a configuration error as its field, value
// and problem, without the name of the package that refused it.
func printError(w io.Writer, cmd string, err error) {
	var fe *depfile.Error
	if errors.As(err, &fe) {
		for _, p := range fe.Problems {
			fmt.Fprintf(w, "%s: %s\n", cmd, problemLine(fe.File, p, "error"))
		}
		return
	}
	msg := err.Error()
	var ce *agentbreaker.ConfigError
	if errors.As(err, &ce) {
		// The error as the package wrote it, less the package's name.
		msg = strings.Replace(msg, ce.Error(), fmt.Sprintf("%s = %v: %s", ce.Field, ce.Value, ce.Problem), 1)
	}
	fmt.Fprintf(w, "%s: %s\n", cmd, msg)
}

// problemLine formats a problem as compilers do: FILE:LINE:COL: KIND: PATH = VALUE: MESSAGE.
func problemLine(file string, p depfile.Problem, kind string) string {
	where := file
	if p.Line > 0 {
		where = fmt.Sprintf("%s:%d", file, p.Line)
		if p.Column > 0 {
			where = fmt.Sprintf("%s:%d", where, p.Column)
		}
	}
	p.Line, p.Column = 0, 0
	if where == "" {
		return kind + ": " + p.String()
	}
	return where + ": " + kind + ": " + p.String()
}

// parseFlags parses a subcommand's flags. The usage is printed only when asked for
// (-h); a bad flag gives a one-line usage error naming it, which exitCode prints.
func parseFlags(fs *flag.FlagSet, args []string) error {
	printUsage, out := fs.Usage, fs.Output()
	// The flag package prints the error and the whole usage on any bad flag; keep it
	// quiet and print one line instead.
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = printUsage
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		if printUsage != nil {
			printUsage()
		} else {
			fs.PrintDefaults()
		}
		return err
	case err != nil:
		return &usageError{msg: err.Error()}
	}
	return nil
}
