#!/usr/bin/env bash
# Records the benchmark runs that docs/benchmarks.md, docs/fleet.md, docs/partial-outages.md,
# docs/adaptive-concurrency.md, docs/tuning.md
# and the README quote, as go test prints them, into docs/bench/STAMP*.txt; then
# `cd test && go test ./docs -update` rewrites the pages' tables and figures from them
# (internal/benchtable reads the files). Run it on a quiet machine (load average below 1)
# and nothing else running: every figure is a median over the runs of one recording.
# The fleet file needs a Redis (AGENTBREAKER_REDIS_ADDR, default 127.0.0.1:6379), the
# journal file a PostgreSQL (AGENTBREAKER_POSTGRES_DSN).
#
#	bench/record.sh [STAMP [PART...]]
#
# STAMP defaults to today (UTC). PARTs, by default all of them: main (STAMP.txt), fleet,
# adaptive (one file per GOMAXPROCS), callbacks, staleness, journal, tune. A part recorded
# alone gets a stamp of its own: the pages read each file by the name test/docs/figures.go
# and their run markers give it, so point those at the new file.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=${1:-$(date -u +%F)}
shift || true
parts=${*:-main fleet adaptive callbacks staleness journal tune}
out=docs/bench/$stamp
want() { [[ " $parts " == *" $1 "* ]]; }
for p in $parts; do
	case $p in
	main | fleet | adaptive | callbacks | staleness | journal | tune) ;;
	*)
		echo "record.sh: unknown part $p (want main, fleet, adaptive, callbacks, staleness, journal or tune)" >&2
		exit 2
		;;
	esac
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if want main; then
	(cd bench && go test -run '^$' -bench '^Benchmark(Closed|Open|HalfOpen|Throttle|Baseline|Registry)' -benchmem -count 6 .) > "$out.txt"
fi
if want fleet; then
	(cd bench && go test -run '^$' -bench '^BenchmarkFleet' -benchmem -count 3 .) > "$out-fleet.txt"
fi
if want adaptive; then
	# One file per GOMAXPROCS: benchtable drops go test's "-N" suffix, so the two must not
	# mix. The plugin's paired run (the closed path as the tool callbacks run it, limit on
	# and off) goes with the one-goroutine file.
	{
		(cd bench && go test -run '^$' -bench '^BenchmarkAdaptiveLimit' -benchmem -cpu 1 -count 6 .)
		go test -run '^$' -bench '^BenchmarkCallbacksPerCallAdaptivePaired$' -benchmem -cpu 1 -count 6 ./callbacks/
	} > "$out-adaptive.txt"
	(cd bench && go test -run '^$' -bench '^BenchmarkAdaptiveLimit' -benchmem -cpu 2 -count 6 .) > "$out-adaptive-cpu2.txt"
fi
if want callbacks; then
	{
		go test -run '^$' -bench '^BenchmarkToolCallOverhead$/calls=1/' -benchmem -count 6 ./callbacks/
		go test -run '^$' -bench '^BenchmarkToolCallOverheadPaired$' -benchmem -benchtime 60000x -count 6 ./callbacks/
		go test -run '^$' -bench '^BenchmarkConcurrentSessionsPaired$' -cpu 2 -benchtime 50x -count 6 ./callbacks/
	} > "$out-callbacks.txt"
fi
if want staleness; then
	go test -run '^$' -bench CoarseStaleness -benchtime 20000000x -count 6 ./breaker/ > "$out-staleness.txt"
fi
if want journal; then
	# The journal's backends: SQLite in a temporary directory, PostgreSQL at
	# AGENTBREAKER_POSTGRES_DSN (default postgres://postgres@127.0.0.1:5432/test).
	(cd test && go test -run '^$' -bench Intend -benchtime 2s -count 3 ./journal/) > "$out-journal.txt"
fi
if want tune; then
	go test -run '^$' -bench '^BenchmarkTune$' -benchmem -benchtime 1x -count 3 ./internal/sim/ > "$out-tune.txt"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
