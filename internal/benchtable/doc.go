// Command benchtable prints the tables and figures of docs/benchmarks.md (and the
// benchmark figures of README.md and docs/fleet.md) from a recorded `go test -bench`
// run, so that a page can never disagree with the run it quotes. It reads the file as
// go test writes it (the goos, goarch, pkg and cpu header, then one line per benchmark
// run) and takes, for each benchmark and unit, the median over the runs.
//
// The recorded runs are plain text files under docs/bench, written by go test itself;
// bench/record.sh records them all again (on a quiet machine: load average below 1), and
// `cd test && go test ./docs -update` then rewrites the pages from them.
//
// Benchmarks are named as go test prints them, without "Benchmark" and without the
// "-N" GOMAXPROCS suffix: Closed/agentbreaker, ClosedParallel/gobreaker-twostep.
//
//	benchtable table [-match REGEXP] [-units ns/op,allocs/op] FILE
//	    every benchmark (or those matching), its number of runs and its medians
//	benchtable pivot -rows R1,R2 -cols C1,C2 [-units ns/op,allocs/op] FILE
//	    a grid: the cell of row R and column C is benchmark R/C
//	benchtable median [-unit ns/op] FILE NAME
//	benchtable ratio [-unit ns/op] FILE A B       median(A) / median(B)
//	benchtable increase [-unit ns/op] FILE A B    (median(A) − median(B)) / median(B), in %
//	benchtable delta [-unit allocs/op] FILE A B   median(A) − median(B)
//
// Medians are written with three significant digits (8.93, 14.7, 167, 1,240), whole
// numbers as they are; ratios and percentages with two (7.9, 0.47, 16, 1.0%).
package main
