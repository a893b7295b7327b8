#!/usr/bin/env bash
# Records the benchmark runs that docs/benchmarks.md, docs/fleet.md, docs/partial-outages.md,
# docs/adaptive-concurrency.md
# and the README quote, as go test prints them, into docs/bench/STAMP*.txt; then
# `cd test && go test ./docs -update` rewrites the pages' tables and figures from them
# (internal/benchtable reads the files). Run it on a quiet machine (load average below 1)
# and nothing else running: every figure is a median over the runs of one recording.
# The fleet file needs a Redis (AGENTBREAKER_REDIS_ADDR, default 127.0.0.1:6379), the
# journal file a PostgreSQL (AGENTBREAKER_POSTGRES_DSN).
#
#	bench/record.sh [STAMP]    STAMP defaults to the one the pages read (test/docs/figures.go)
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=${1:-2026-12-02}
out=docs/bench/$stamp
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
(cd bench && go test -run '^$' -bench '^Benchmark(Closed|Open|HalfOpen|Throttle|Baseline|Registry)' -benchmem -count 6 .) > "$out.txt"
(cd bench && go test -run '^$' -bench '^BenchmarkFleet' -benchmem -count 3 .) > "$out-fleet.txt"
# One file per GOMAXPROCS: benchtable drops go test's "-N" suffix, so the two must not mix.
(cd bench && go test -run '^$' -bench '^BenchmarkAdaptiveLimit' -benchmem -cpu 1 -count 6 .) > "$out-adaptive.txt"
(cd bench && go test -run '^$' -bench '^BenchmarkAdaptiveLimit' -benchmem -cpu 2 -count 6 .) > "$out-adaptive-cpu2.txt"
{
	go test -run '^$' -bench '^BenchmarkToolCallOverhead$/calls=1/' -benchmem -count 6 ./callbacks/
	go test -run '^$' -bench '^BenchmarkToolCallOverheadPaired$' -benchmem -benchtime 60000x -count 6 ./callbacks/
	go test -run '^$' -bench '^BenchmarkConcurrentSessionsPaired$' -cpu 2 -benchtime 50x -count 6 ./callbacks/
} > "$out-callbacks.txt"
go test -run '^$' -bench CoarseStaleness -benchtime 20000000x -count 6 ./breaker/ > "$out-staleness.txt"
# The journal's backends: SQLite in a temporary directory, PostgreSQL at
# AGENTBREAKER_POSTGRES_DSN (default postgres://postgres@127.0.0.1:5432/test).
(cd test && go test -run '^$' -bench Intend -benchtime 2s -count 3 ./journal/) > "$out-journal.txt"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
