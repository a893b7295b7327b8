package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// run is a recorded go test -bench output: its header and, per benchmark, the values
// of each unit over the runs, in the order they were printed.
type run struct {
	goos, goarch, cpu string
	pkgs              []string
	names             []string                        // benchmarks, in first-seen order
	values            map[string]map[string][]float64 // benchmark → unit → one value per run
}

// procsSuffix is the "-N" go test appends to a benchmark's name when GOMAXPROCS is not 1.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// parse reads go test -bench output. A benchmark line is the name, the iteration count,
// then value-unit pairs; any other line (PASS, ok, a log line, a skip) is passed over.
func parse(r io.Reader) (*run, error) {
	res := &run{values: map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if k, v, ok := strings.Cut(text, ": "); ok && !strings.HasPrefix(text, "Benchmark") {
			v = strings.TrimSpace(v)
			switch k {
			case "goos":
				res.goos = first(res.goos, v)
			case "goarch":
				res.goarch = first(res.goarch, v)
			case "cpu":
				res.cpu = first(res.cpu, v)
			case "pkg":
				if !slices.Contains(res.pkgs, v) {
					res.pkgs = append(res.pkgs, v)
				}
			}
			continue
		}
		f := strings.Fields(text)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
			continue // a name on its own line, before the benchmark's log output
		}
		name := procsSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		units := res.values[name]
		if units == nil {
			units = map[string][]float64{}
			res.values[name] = units
			res.names = append(res.names, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q is not a number: %s", line, f[i], text)
			}
			units[f[i+1]] = append(units[f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(res.names) == 0 {
		return nil, fmt.Errorf("no benchmark line: is this go test -bench output?")
	}
	return res, nil
}

func first(have, v string) string {
	if have != "" {
		return have
	}
	return v
}

// runs is how many times a benchmark ran: the most values any of its units has.
func (r *run) runs(name string) int {
	n := 0
	for _, vs := range r.values[name] {
		n = max(n, len(vs))
	}
	return n
}

// median is the median of a benchmark's values in unit.
func (r *run) median(name, unit string) (float64, error) {
	units, ok := r.values[name]
	if !ok {
		return 0, fmt.Errorf("no benchmark %s in the run", name)
	}
	vs, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("benchmark %s has no %s (it has %s)", name, unit, strings.Join(sortedKeys(units), ", "))
	}
	return median(vs), nil
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
