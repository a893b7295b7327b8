#!/usr/bin/env bash
# Prints the README's weight table: what a program pays for each layer of agentbreaker
# it imports. For each program in bench/weight: the packages compiled (go list -deps,
# standard library included), the binary size (plain and stripped), and the cold build
# time with an empty build cache (modules already downloaded). Rows (a) and (b) are
# built twice each, interleaved, and the faster build is kept, so a busy machine
# skews both alike. Usage: ./bench/weight.sh [rounds]
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
mb() { echo "scale=1; $1 / 1048576" | bc; }
echo "| Program | Packages compiled | Binary | Stripped | Cold build |"
echo "|---|---|---|---|---|"
for p in "${rows[@]}"; do
	n=$(go list -deps "./weight/$p" | wc -l)
	size=$(stat -c %s "$out/$p")
	go build -ldflags='-s -w' -o "$out/$p.stripped" "./weight/$p"
	stripped=$(stat -c %s "$out/$p.stripped")
	printf '| %s | %d | %s MB | %s MB | %.0f s |\n' "$(label $p)" "$n" "$(mb "$size")" "$(mb "$stripped")" "${best[$p]}"
done
