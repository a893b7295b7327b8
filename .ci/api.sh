#!/usr/bin/env bash
# Keeps the exported API deliberate (STYLE.md item 20): a change to it fails CI unless
# the same commit updates api/baseline.txt, and CHANGELOG.md with it.
#
#   bash .ci/api.sh           check (CI runs this)
#   bash .ci/api.sh -update   rewrite api/baseline.txt from the work tree, and say what
#                             changed against the last committed baseline
#
# The design:
#  1. api/baseline.txt is text: every exported feature of every public package (not
#     internal/, cmd/, examples/, deploy/), one line each, in the style of Go's own
#     api/go1.txt, written by `go -C test run ./apicheck ..` (see its doc). The check
#     prints the listing of the work tree into a temporary file and fails if it differs
#     from the committed file, showing the diff and the command above. This is the gate:
#     any change to the API, compatible or not, must come with the updated baseline.
#  2. apidiff (golang.org/x/exp/cmd/apidiff, pinned below, installed with go install
#     when it is missing) then names the change compatible or incompatible. It needs
#     the API as it was, and a baseline in apidiff's own format is binary export data,
#     so that is never committed: the old state is a commit of this repository,
#       - when the listing differs from the baseline: the last commit that changed
#         api/baseline.txt (CI held that commit's code to that baseline);
#       - when it matches but the work tree's baseline differs from HEAD's (updated,
#         not yet committed): HEAD;
#       - when it matches and HEAD changed the baseline: HEAD's first parent.
#     Otherwise nothing changed and apidiff does not run: the usual check takes a few
#     seconds once the build cache holds the packages. The commit's main-module
#     packages are extracted with git archive into a temporary directory, where
#     `apidiff -m -w` writes their export data (also temporary); `apidiff -m` compares
#     that with the work tree. If there is no git, or the commit is not in the clone
#     (a shallow clone cuts history), the script says so and skips the classification:
#     the text comparison alone still decides.
#  3. When the baseline changes (the last two cases above), CHANGELOG.md must change
#     with it, since it names everything a user sees change.
# Apart from api/baseline.txt with -update, it writes nothing into the work tree.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off
apidiff_version=v0.0.0-20261121134650-e1094eeca1b5 # golang.org/x/exp, 2026-11-21
baseline=api/baseline.txt
update=false
case "${1:-}" in
'') ;;
-update) update=true ;;
*) echo "usage: bash .ci/api.sh [-update]" >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
say() { echo "api: $*"; }
mod=$(go list -m -f '{{.Path}}')

have_git=false
git rev-parse --verify -q HEAD >/dev/null 2>&1 && have_git=true
# committed_blob REV: the object name of api/baseline.txt at REV, or nothing.
committed_blob() { git rev-parse -q --verify "$1:$baseline" 2>/dev/null || true; }

# classify COMMIT: apidiff's verdict on the API change from COMMIT to the work tree,
# for the public packages alone.
classify() {
	local commit=$1 short
	short=$(git rev-parse --short "$commit")
	if [ "$(git rev-parse --is-shallow-repository)" = true ] &&
		grep -qx "$(git rev-parse "$commit")" "$(git rev-parse --git-path shallow)" 2>/dev/null; then
		say "not classifying: $short is where this shallow clone's history stops, so it may"
		say "not be the commit the baseline was written from (git fetch --unshallow, run again)"
		return 0
	fi
	local gobin apidiff
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin=$(go env GOPATH | cut -d: -f1)/bin
	apidiff=$gobin/apidiff
	if ! go version -m "$apidiff" 2>/dev/null | grep -qF "$apidiff_version"; then
		say "installing apidiff $apidiff_version"
		go install "golang.org/x/exp/cmd/apidiff@$apidiff_version"
	fi
	# The main module's files at COMMIT: go.mod, go.sum, the root's .go files and every
	# directory but those holding no public package or its dependencies (the nested
	# modules under test/, bench/ and sim/peers are outside ./... anyway).
	local paths=()
	local type p
	while read -r _ type _ p; do
		case "$type $p" in
		"blob go.mod" | "blob go.sum" | blob\ *.go) paths+=("$p") ;;
		tree\ .* | "tree cmd" | "tree examples" | "tree deploy" | "tree docs" | "tree test" | "tree bench" | "tree api") ;;
		tree\ *) paths+=("$p") ;;
		esac
	done < <(git ls-tree "$commit")
	mkdir -p "$tmp/old"
	git archive --format=tar "$commit" -- "${paths[@]}" | tar -x -C "$tmp/old"
	say "apidiff: the API at $short against the work tree"
	if ! (cd "$tmp/old" && "$apidiff" -m -w "$tmp/old.x" "$mod") 2>"$tmp/err" ||
		! "$apidiff" -m "$tmp/old.x" "$mod" >"$tmp/report" 2>>"$tmp/err"; then
		grep -v '^Ignoring internal package' "$tmp/err" >&2 || true
		say "apidiff failed (above); the text comparison still decides"
		return 0
	fi
	# apidiff -m covers every package of the module but internal ones; keep the public.
	local not_public="^- ([.]/|package ${mod//./[.]}/)([^ :]*/)?(internal|cmd|examples|deploy)[/.:]"
	awk -v skip="$not_public" '
		/^(Inc|C)ompatible changes:$/ { section = $0; next }
		$0 ~ skip { next }
		{ if (section != printed) { print "  " section; printed = section } print "    " $0 }
	' "$tmp/report" >"$tmp/public"
	if [ ! -s "$tmp/public" ]; then
		say "apidiff: no change to the public packages' API"
	else
		cat "$tmp/public"
		if grep -q '^  Incompatible changes:' "$tmp/public"; then
			say "INCOMPATIBLE: a user's code that compiled against $short may not compile now"
		else
			say "compatible: every change adds to the API"
		fi
	fi
}

go -C test run ./apicheck .. >"$tmp/listing"

if $update; then
	mkdir -p "$(dirname "$baseline")"
	if [ -f "$baseline" ] && cmp -s "$tmp/listing" "$baseline"; then
		say "$baseline is up to date"
	else
		cp "$tmp/listing" "$baseline"
		say "wrote $baseline; name what a user sees change in CHANGELOG.md, under Unreleased"
	fi
	if $have_git && last=$(git log -1 --format=%H -- "$baseline") && [ -n "$last" ]; then
		classify "$last"
	fi
	exit 0
fi

if [ ! -f "$baseline" ] || ! cmp -s "$tmp/listing" "$baseline"; then
	against=$baseline
	if [ ! -f "$baseline" ]; then
		say "there is no $baseline"
		against=/dev/null
	fi
	echo "api: the exported API differs from $baseline (- baseline, + the code):"
	diff -u "$against" "$tmp/listing" | tail -n +3 | grep '^[-+]' >"$tmp/diff" || true
	head -n 300 "$tmp/diff"
	[ "$(wc -l <"$tmp/diff")" -le 300 ] || say "... $(wc -l <"$tmp/diff") lines in all"
	if ! $have_git; then
		say "not classifying: no git history here"
	elif last=$(git log -1 --format=%H -- "$baseline") && [ -n "$last" ]; then
		classify "$last"
	else
		say "not classifying: no commit holds $baseline"
	fi
	echo "api: if the change is deliberate, update the baseline in the same commit:"
	echo "api:   bash .ci/api.sh -update"
	echo "api: and name the change in CHANGELOG.md, under Unreleased."
	exit 1
fi

if ! $have_git; then
	say "the API matches $baseline (no git: not checking what changed it)"
	exit 0
fi
# The listing matches. Did the baseline just change (here, or in HEAD)?
old=
since=
if [ "$(committed_blob HEAD)" != "$(git hash-object "$baseline")" ]; then
	old=HEAD since=HEAD
elif git rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null 2>&1 &&
	[ "$(committed_blob 'HEAD^')" != "$(committed_blob HEAD)" ]; then
	old='HEAD^' since='HEAD^'
elif ! git rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null 2>&1; then
	say "the API matches $baseline (HEAD has no parent in this clone: not checking whether HEAD changed it)"
	exit 0
fi
if [ -z "$old" ]; then
	say "the API matches $baseline and this change leaves it as it was"
	exit 0
fi
say "the API matches $baseline, which changes since $since"
classify "$old"
if git diff --quiet "$since" -- CHANGELOG.md && [ -z "$(git status --porcelain -- CHANGELOG.md)" ]; then
	say "$baseline changes since $since but CHANGELOG.md does not: name the change there, under Unreleased"
	exit 1
fi
