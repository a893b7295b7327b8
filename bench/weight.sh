#!/usr/bin/env bash
# Prints the README's weight table: what a program pays for each layer of agentbreaker
# it imports. For each program in bench/weight: the packages compiled (go list -deps,
# standard library included), the binary size (plain and stripped), and the cold build
# time with an empty build cache (modules already downloaded). Each program is built
# [rounds] times (default 2), the programs interleaved, and its fastest build is kept,
# so a busy machine skews all alike. Each row also gives what it adds to row (a), the
# build time also in percent. Sizes are in MiB. Usage: ./bench/weight.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")"
rounds=${1:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go mod download

declare -A best
rows=(adk guard telemetry sqlite)
for ((r = 1; r <= rounds; r++)); do
	for p in "${rows[@]}"; do
		cache=$(mktemp -d)
		start=$(date +%s.%N)
		GOCACHE=$cache go build -o "$out/$p" "./weight/$p"
		end=$(date +%s.%N)
		chmod -R u+w "$cache" && rm -rf "$cache"
		t=$(echo "$end - $start" | bc)
		if [[ -z "${best[$p]:-}" ]] || (($(echo "$t < ${best[$p]}" | bc))); then best[$p]=$t; fi
	done
done

label() {
	case $1 in
	adk) echo "(a) adk-go alone" ;;
	guard) echo "(b) + breaker, dependencymap, callbacks" ;;
	telemetry) echo "(c) + telemetry (Prometheus)" ;;
	sqlite) echo "(d) + journal on SQLite" ;;
	esac
}
mb() { printf '%.2f' "$(echo "scale=4; $1 / 1048576" | bc)"; }
delta() { # $1 = value, $2 = (a)'s value, $3 = printf format of the difference; nothing for (a)
	[ "$p" = adk ] || printf " (%+$3)" "$(echo "$1 - $2" | bc)"
}
timecol() { # the cold build of row $p, and what it adds to (a)'s
	printf '%.1f s' "${best[$p]}"
	[ "$p" = adk ] || printf ' (%+.1f s, %+.0f%%)' "$(echo "${best[$p]} - $base_t" | bc)" \
		"$(echo "scale=4; (${best[$p]} - $base_t) * 100 / $base_t" | bc)"
}
echo "| Program | Packages compiled | Binary | Stripped | Cold build |"
echo "|---|---|---|---|---|"
for p in "${rows[@]}"; do
	n=$(go list -deps "./weight/$p" | wc -l)
	size=$(stat -c %s "$out/$p")
	go build -ldflags='-s -w' -o "$out/$p.stripped" "./weight/$p"
	stripped=$(stat -c %s "$out/$p.stripped")
	if [ "$p" = adk ]; then base_n=$n base_size=$size base_stripped=$stripped base_t=${best[$p]}; fi
	printf '| %s | %d%s | %s MiB%s | %s MiB%s | %s |\n' "$(label "$p")" \
		"$n" "$(delta "$n" "$base_n" d)" \
		"$(mb "$size")" "$(delta "$(mb "$size")" "$(mb "$base_size")" .2f)" \
		"$(mb "$stripped")" "$(delta "$(mb "$stripped")" "$(mb "$base_stripped")" .2f)" \
		"$(timecol)"
done
