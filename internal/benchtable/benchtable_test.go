package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestNumber(t *testing.T) {
	tests := []struct {
		name string
		v    float64
		sig  int
		want string
	}{
		{name: "zero", v: 0, sig: 3, want: "0"},
		{name: "whole number as it is", v: 14, sig: 3, want: "14"},
		{name: "one digit before the point", v: 8.926, sig: 3, want: "8.93"},
		{name: "two digits before the point", v: 14.66, sig: 3, want: "14.7"},
		{name: "three digits: no decimals", v: 330.6, sig: 3, want: "331"},
		{name: "thousands separated", v: 1250.4, sig: 3, want: "1,250"},
		{name: "large, rounded to its digits", v: 891150, sig: 3, want: "891,000"},
		{name: "below one", v: 0.4731, sig: 3, want: "0.473"},
		{name: "rounding up a digit", v: 9.996, sig: 3, want: "10.0"},
		{name: "rounding up to a whole hundred", v: 99.96, sig: 3, want: "100"},
		{name: "ratio, two digits", v: 7.87, sig: 2, want: "7.9"},
		{name: "ratio above ten", v: 18.9, sig: 2, want: "19"},
		{name: "negative", v: -2.345, sig: 3, want: "-2.35"},
		{name: "negative thousands", v: -1234567, sig: 3, want: "-1,230,000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := number(tt.v, tt.sig); got != tt.want {
				t.Errorf("number(%v, %d) = %q, want %q", tt.v, tt.sig, got, tt.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		vs   []float64
		want float64
	}{
		{name: "one run", vs: []float64{3}, want: 3},
		{name: "odd count, unsorted", vs: []float64{10, 8, 400}, want: 10},
		{name: "even count: mean of the middle two", vs: []float64{5, 4, 100, 1}, want: 4.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := median(tt.vs); got != tt.want {
				t.Errorf("median(%v) = %v, want %v", tt.vs, got, tt.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	f, err := os.Open("testdata/run.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if r.goos != "linux" || r.goarch != "amd64" || r.cpu != "Test CPU @ 2.0GHz" {
		t.Errorf("header: goos %q goarch %q cpu %q", r.goos, r.goarch, r.cpu)
	}
	if want := "Closed/ours Closed/theirs ClosedParallel/ours Slow"; strings.Join(r.names, " ") != want {
		t.Errorf("names %v, want %s", r.names, want)
	}
	tests := []struct {
		name, bench, unit string
		wantRuns          int
		want              float64
		wantErr           string
	}{
		{name: "median of three runs across two headers", bench: "Closed/ours", unit: "ns/op", wantRuns: 3, want: 9},
		{name: "an outlier does not move the median", bench: "Closed/theirs", unit: "ns/op", wantRuns: 3, want: 170},
		{name: "allocations", bench: "Closed/theirs", unit: "allocs/op", wantRuns: 3, want: 1},
		{name: "two runs", bench: "ClosedParallel/ours", unit: "ns/op", wantRuns: 2, want: 4.5},
		{name: "a custom unit, after a log line", bench: "Slow", unit: "calls/s", wantRuns: 1, want: 101},
		{name: "unknown benchmark", bench: "Fleet", unit: "ns/op", wantErr: "no benchmark Fleet"},
		{name: "unknown unit", bench: "Slow", unit: "allocs/op", wantErr: "has no allocs/op (it has calls/s, ns/op)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.median(tt.bench, tt.unit)
			if !errorAsWanted(t, err, tt.wantErr) {
				return
			}
			if got != tt.want || r.runs(tt.bench) != tt.wantRuns {
				t.Errorf("median %v over %d runs, want %v over %d", got, r.runs(tt.bench), tt.want, tt.wantRuns)
			}
		})
	}
}

func TestParseRejectsWhatIsNotBenchmarkOutput(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{name: "no benchmark line", in: "goos: linux\nPASS\n", wantErr: "no benchmark line"},
		{name: "a value that is not a number", in: "BenchmarkX-2 10 abc ns/op\n", wantErr: `"abc" is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCLI(t *testing.T) {
	const file = "testdata/run.txt"
	tests := []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{name: "median", args: []string{"median", file, "Closed/ours"}, want: "9\n"},
		{name: "median of another unit", args: []string{"median", "-unit", "B/op", file, "Closed/theirs"}, want: "48\n"},
		{name: "ratio", args: []string{"ratio", file, "Closed/theirs", "Closed/ours"}, want: "19\n"},
		{name: "increase", args: []string{"increase", file, "Closed/ours", "ClosedParallel/ours"}, want: "100%\n"},
		{name: "delta", args: []string{"delta", "-unit", "allocs/op", file, "Closed/theirs", "Closed/ours"}, want: "+1\n"},
		{name: "table", args: []string{"table", "-match", "^Closed", file}, want: `goos: linux, goarch: amd64, cpu: Test CPU @ 2.0GHz
benchmark            runs  ns/op  allocs/op
Closed/ours             3      9          0
Closed/theirs           3    170          1
ClosedParallel/ours     2   4.50          0
`},
		{name: "table with a unit a benchmark lacks", args: []string{"table", "-units", "ns/op,calls/s", "-match", "Slow|Parallel", file}, want: `goos: linux, goarch: amd64, cpu: Test CPU @ 2.0GHz
benchmark            runs      ns/op  calls/s
ClosedParallel/ours     2       4.50        –
Slow                    1  9,900,000      101
`},
		{name: "pivot", args: []string{"pivot", "-rows", "Closed,ClosedParallel", "-cols", "ours,theirs", file}, want: `goos: linux, goarch: amd64, cpu: Test CPU @ 2.0GHz
medians; runs per benchmark: 2 to 3
ns/op, allocs/op     ours  theirs
Closed               9, 0  170, 1
ClosedParallel    4.50, 0       –
`},
		{name: "no subcommand", args: nil, wantErr: "usage"},
		{name: "unknown subcommand", args: []string{"mean", file}, wantErr: `unknown subcommand "mean"`},
		{name: "missing name", args: []string{"ratio", file, "Closed/ours"}, wantErr: "wants a file and 2 benchmark name(s)"},
		{name: "ratio to zero", args: []string{"ratio", "-unit", "allocs/op", file, "Closed/theirs", "Closed/ours"}, wantErr: "median allocs/op is 0"},
		{name: "no match", args: []string{"table", "-match", "Nothing", file}, wantErr: "no benchmark matches"},
		{name: "pivot without rows", args: []string{"pivot", "-cols", "ours", file}, wantErr: "pivot wants -rows and -cols"},
		{name: "missing file", args: []string{"median", "testdata/none.txt", "X"}, wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := cli(tt.args, &out)
			if !errorAsWanted(t, err, tt.wantErr) {
				return
			}
			if out.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tt.want)
			}
		})
	}
}

// errorAsWanted fails t unless err contains wantErr (or is nil, when wantErr is empty),
// and reports whether the case goes on to check its result.
func errorAsWanted(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err %v, want one containing %q", err, wantErr)
		}
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}
