package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

func main() {
	if err := cli(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
}

const usage = "usage: benchtable table|pivot|median|ratio|increase|delta [flags] FILE [NAME...] (go doc ./internal/benchtable)"

// cli runs one subcommand and writes what it prints to w.
func cli(args []string, w io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	cmd := args[0]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	match := fs.String("match", "", "table: only the benchmarks whose name matches this regular expression")
	units := fs.String("units", "ns/op,allocs/op", "table, pivot: the units to show, comma-separated")
	unit := fs.String("unit", "ns/op", "median, ratio, increase, delta: the unit")
	rows := fs.String("rows", "", "pivot: the rows, comma-separated")
	cols := fs.String("cols", "", "pivot: the columns, comma-separated")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	rest := fs.Args()
	wantNames := map[string]int{"table": 0, "pivot": 0, "median": 1, "ratio": 2, "increase": 2, "delta": 2}
	n, ok := wantNames[cmd]
	if !ok {
		return fmt.Errorf("unknown subcommand %q; %s", cmd, usage)
	}
	if len(rest) != 1+n {
		return fmt.Errorf("%s wants a file and %d benchmark name(s), got %q", cmd, n, rest)
	}
	f, err := os.Open(rest[0])
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", rest[0], err)
	}
	names := rest[1:]
	switch cmd {
	case "table":
		var re *regexp.Regexp
		if *match != "" {
			if re, err = regexp.Compile(*match); err != nil {
				return err
			}
		}
		return table(w, r, re, split(*units))
	case "pivot":
		return pivot(w, r, split(*rows), split(*cols), split(*units))
	case "median":
		v, err := r.median(names[0], *unit)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, number(v, 3))
		return err
	}
	return compare(w, r, cmd, names[0], names[1], *unit)
}

// compare writes what cmd (ratio, increase or delta) says of benchmark a's median
// in unit against benchmark b's.
func compare(w io.Writer, r *run, cmd, nameA, nameB, unit string) error {
	a, err := r.median(nameA, unit)
	if err != nil {
		return err
	}
	b, err := r.median(nameB, unit)
	if err != nil {
		return err
	}
	var out string
	switch cmd {
	case "ratio":
		if b == 0 {
			return fmt.Errorf("ratio: %s's median %s is 0", nameB, unit)
		}
		out = number(a/b, 2)
	case "increase":
		if b == 0 {
			return fmt.Errorf("increase: %s's median %s is 0", nameB, unit)
		}
		out = number(100*(a-b)/b, 2) + "%"
	case "delta":
		out = number(a-b, 3)
		if a-b > 0 {
			out = "+" + out
		}
	}
	_, err = fmt.Fprintln(w, out)
	return err
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
