#!/usr/bin/env bash
# Runs the comparison benchmarks ten times, keeps the raw output in bench/results.txt
# (gitignored) and summarises it with benchstat. Extra arguments go to `go test`,
# for example: ./bench/run.sh -cpu 1,2
set -euo pipefail

cd "$(dirname "$0")"

go test -run '^$' -bench . -benchmem -count 10 -timeout 60m "$@" ./... | tee results.txt

benchstat=$(command -v benchstat || true)
if [[ -z "$benchstat" ]]; then
	bin=$(go env GOBIN)
	if [[ -z "$bin" ]]; then
		bin="$(go env GOPATH | cut -d: -f1)/bin"
	fi
	benchstat="$bin/benchstat"
	if [[ ! -x "$benchstat" ]]; then
		go install golang.org/x/perf/cmd/benchstat@latest
	fi
fi
"$benchstat" results.txt
