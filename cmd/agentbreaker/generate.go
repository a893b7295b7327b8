package main

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// generate writes recorded traffic with outages of known shapes, for tune to learn from.
func generate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	days := fs.Int("days", 30, "days of traffic")
	seed := fs.Uint64("seed", 1, "seed of every draw")
	rate := fs.Float64("rate", 0.1, "mean calls a second to crm (invoices gets 40% of it)")
	outages := fs.Int("outages", 10, "outages per dependency, of the shapes hard down, partial, slow, flapping and 429 storm in turn")
	out := fs.String("o", "-", "file to write the records to (\"-\": standard output)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: agentbreaker generate [flags]\n\nWrites recorded calls to two dependencies, crm and invoices, as the plugin logs\nthem (JSON, one call a line): a daily load cycle, background failures, short\nbursts of failures, and outages of five shapes. Prints the outages it put in.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageErrorf("want no arguments, got %q", fs.Args())
	case *days < 1 || *days > 366:
		return usageErrorf("-days %d: want 1 to 366", *days)
	case !(*rate > 0 && *rate <= 1000):
		return usageErrorf("-rate %v: want more than 0 and at most 1000 calls a second", *rate)
	case *outages < 0 || *outages > *days:
		return usageErrorf("-outages %d: want 0 to -days (%d)", *outages, *days)
	}
	var got []sim.GeneratedOutage
	err := writeTo(*out, stdout, func(w io.Writer) (err error) {
		got, err = sim.Generate(w, sim.GenerateConfig{Days: *days, Seed: *seed, Rate: *rate, Outages: *outages})
		return err
	})
	if err != nil || *out == "-" {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "dependency\toutage\tshape\t")
	for _, o := range got {
		fmt.Fprintf(tw, "%s\t%s–%s\t%s\t\n", o.Dependency, o.Start.Format("Jan 2 15:04"), o.End.Format("15:04"), o.Shape)
	}
	return tw.Flush()
}
