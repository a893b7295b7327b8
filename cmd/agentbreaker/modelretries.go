package main

import (
	"encoding/json"
	"flag"
	"io"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// modelRetries runs sim.RunModelRetries: an OpenAI-compatible primary route that
// fails, with openai-go's default retries and with the failover owning retries.
func modelRetries(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("model-retries", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s sim.ModelRetries
	fs.IntVar(&s.Turns, "turns", 100, "turns, one logical model call each")
	fs.DurationVar(&s.Every, "every", 0, "time between two turns (default 5s)")
	fs.IntVar(&s.Status, "status", 503, "the primary's HTTP status, 400 to 599")
	fs.DurationVar(&s.RetryAfter, "retry-after", 0, "Retry-After the primary sends, whole seconds (default none)")
	fs.DurationVar(&s.Deadline, "deadline", 0, "the caller's deadline per turn (default 1m0s)")
	fs.Uint64Var(&s.Seed, "seed", 1, "seed of openai-go's retry jitter")
	jsonOut := fs.Bool("json", false, "print the rows as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("model-retries takes no arguments, got %q", fs.Arg(0))
	}
	if s.Turns <= 0 {
		return usageErrorf("-turns %d: want at least 1", s.Turns)
	}
	rows, err := sim.RunModelRetries(s)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return sim.WriteModelRetries(stdout, s, rows)
}
