package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// header writes the machine the run was recorded on, as go test printed it.
func header(w io.Writer, r *run) {
	fmt.Fprintf(w, "goos: %s, goarch: %s, cpu: %s\n", r.goos, r.goarch, r.cpu)
}

// table writes one row per benchmark: its name, its number of runs and its median in
// each unit ("–" when the benchmark did not report the unit).
func table(w io.Writer, r *run, match *regexp.Regexp, units []string) error {
	header(w, r)
	grid := [][]string{append([]string{"benchmark", "runs"}, units...)}
	for _, name := range r.names {
		if match != nil && !match.MatchString(name) {
			continue
		}
		row := []string{name, fmt.Sprint(r.runs(name))}
		for _, u := range units {
			row = append(row, cell(r, name, []string{u}))
		}
		grid = append(grid, row)
	}
	if len(grid) == 1 {
		return fmt.Errorf("no benchmark matches %v", match)
	}
	return write(w, grid)
}

// pivot writes a grid whose cell at row R and column C is benchmark R/C, each unit's
// median separated by commas; "–" where the run has no such benchmark.
func pivot(w io.Writer, r *run, rows, cols, units []string) error {
	if len(rows) == 0 || len(cols) == 0 {
		return fmt.Errorf("pivot wants -rows and -cols")
	}
	header(w, r)
	lo, hi := 0, 0
	grid := [][]string{append([]string{strings.Join(units, ", ")}, cols...)}
	found := false
	for _, row := range rows {
		line := []string{row}
		for _, col := range cols {
			name := row + "/" + col
			if _, ok := r.values[name]; ok {
				n := r.runs(name)
				if !found || n < lo {
					lo = n
				}
				hi = max(hi, n)
				found = true
			}
			line = append(line, cell(r, name, units))
		}
		grid = append(grid, line)
	}
	if !found {
		return fmt.Errorf("no benchmark of rows %v and columns %v in the run", rows, cols)
	}
	runs := fmt.Sprint(lo)
	if hi != lo {
		runs = fmt.Sprintf("%d to %d", lo, hi)
	}
	fmt.Fprintf(w, "medians; runs per benchmark: %s\n", runs)
	return write(w, grid)
}

func cell(r *run, name string, units []string) string {
	var vs []string
	for _, u := range units {
		v, err := r.median(name, u)
		if err != nil {
			return "–"
		}
		vs = append(vs, number(v, 3))
	}
	return strings.Join(vs, ", ")
}

// write aligns a grid: the first column to the left, the others to the right.
func write(w io.Writer, grid [][]string) error {
	width := make([]int, len(grid[0]))
	for _, row := range grid {
		for i, c := range row {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, row := range grid {
		var b strings.Builder
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	return nil
}
