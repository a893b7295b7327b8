#!/usr/bin/env bash
# Shows what a user's module pays in go.sum for importing agentbreaker's packages, as
# if the module were published: the current commit is served from a local file proxy
# (the public proxy serves everything else), a fresh user module imports the packages
# given (default: breaker, dependencymap, callbacks), and `go mod tidy` writes its
# go.sum. tidy also records what the tests of every imported package import, so a
# heavy import in a test of ours lands in every user's go.sum: that is why tests that
# need a database driver, a browser or Prometheus live in the test/ module. Prints the
# modules in that go.sum that adk-go's own would not bring and, with the default
# packages, fails if a driver, Prometheus or a test-only module is among them.
# Usage: ./bench/usergraph.sh [package ...]
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=("${@:-breaker dependencymap callbacks}")
work=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT; echo "work: $work" >&2
version=v0.0.0-$(git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S)-$(git rev-parse --short=12 HEAD)
mod=github.com/agentbreaker/agentbreaker
proxy=$work/proxy/$mod/@v
mkdir -p "$proxy"
echo "$version" >"$proxy/list"
printf '{"Version":"%s"}\n' "$version" >"$proxy/$version.info"
cp go.mod "$proxy/$version.mod"
git archive --format=zip --prefix="$mod@$version/" HEAD -- $(git ls-files | grep -v -e '^bench/' -e '^test/' -e '^sim/peers/') >"$proxy/$version.zip"

user() { # $1 = directory, rest = imports; prints "module kind" with kind go.mod (checksum of its go.mod only) or zip
	local dir=$1
	shift
	mkdir -p "$dir"
	{
		echo "package main"
		echo
		echo "import ("
		for p in "$@"; do echo "	_ \"$p\""; done
		echo ")"
		echo
		echo "func main() {}"
	} >"$dir/main.go"
	(cd "$dir" && go mod init example.com/user >/dev/null 2>&1 &&
		GOPROXY="file://$work/proxy,$(go env GOPROXY)" GONOSUMDB=$mod GOFLAGS=-mod=mod go get "$mod@$version" >/dev/null 2>&1 &&
		GOPROXY="file://$work/proxy,$(go env GOPROXY)" GONOSUMDB=$mod go mod tidy >/dev/null 2>&1)
	# A module whose only line ends in /go.mod was read for its requirements, never
	# downloaded or compiled; "code" means its source is needed to build.
	awk '{ if ($2 ~ /\/go.mod$/) { if (!($1 in k)) k[$1] = "go.mod only" } else k[$1] = "code" } END { for (m in k) print m " (" k[m] ")" }' "$dir/go.sum" | sort
}
imports=()
for p in ${pkgs[*]}; do imports+=("$mod/$p"); done
user "$work/adk" google.golang.org/adk/v2/runner google.golang.org/adk/v2/agent/llmagent >"$work/adk.mods"
user "$work/ours" google.golang.org/adk/v2/runner google.golang.org/adk/v2/agent/llmagent "${imports[@]}" >"$work/ours.mods"
echo "modules in go.sum of a user importing ${pkgs[*]} beyond adk-go's:"
comm -13 "$work/adk.mods" "$work/ours.mods" | sed 's/^/  /'
# With the default packages, none of these may appear: they belong to tests, to optional
# packages the user did not import (journal/sqlite, journal/postgres, telemetry, the
# simulator's plots, fleet mode's Redis client) or to the comparison benchmarks.
if [ $# -eq 0 ]; then
	bad=$(comm -13 "$work/adk.mods" "$work/ours.mods" | grep -E "chromedp|goleak|jackc|modernc|prometheus|gonum|rueidis|redis|failsafe|gobreaker" || true)
	if [ -n "$bad" ]; then
		echo "modules the user did not ask for reached the user's go.sum:"; echo "$bad"; exit 1
	fi
fi
