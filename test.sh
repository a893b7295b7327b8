#!/usr/bin/env bash
# Runs the tests of every module in the repository: the library (.) and its
# integration tests (test/, a module of its own so that their dependencies, such as a
# browser driver, never reach a user's module graph). Arguments go to `go test` and
# replace the defaults, for example `./test.sh -short` for the quick path. sim/peers, a
# module of its own too, runs failsafe-go as a row of the partial-outage tables.
#
# The output is plain go test's, read from go test -json by test/internal/testreport, which
# ends it with one line for each skipped test and the reason it gave (a service that is
# not reachable, say), so a run without Redis or PostgreSQL says what did not run.
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -eq 0 ]; then
	set -- -race -shuffle=on -count=1
fi
verbose=
for arg in "$@"; do
	if [ "$arg" = -v ] || [ "$arg" = -test.v ]; then verbose=-v; fi
done
report=$(mktemp -d)
trap 'rm -rf "$report"' EXIT
go -C test build -o "$report/testreport" ./internal/testreport
run_modules() {
	local status=0
	for module in . test sim/peers; do
		echo "== go test $* ./... in $module"
		(cd "$module" && go test -json "$@" ./...) || status=1
	done
	return $status
}
run_modules "$@" | "$report/testreport" $verbose
