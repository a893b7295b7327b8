#!/usr/bin/env bash
# Runs the tests of every module in the repository: the library (.) and its
# integration tests (test/, a module of its own so that their dependencies, such as a
# browser driver, never reach a user's module graph). Arguments go to `go test` and
# replace the defaults, for example `./test.sh -short` for the quick path. sim/peers, a
# module of its own too, runs failsafe-go as a row of the partial-outage tables.
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -eq 0 ]; then
	set -- -race -shuffle=on -count=1
fi
for module in . test sim/peers; do
	echo "== go test $* ./... in $module"
	(cd "$module" && go test "$@" ./...)
done
