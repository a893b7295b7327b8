// Command apicheck prints the exported API of the module's public packages (every
// package but those under internal/, cmd/, examples/ and deploy/, as
// ../shared/tools/surface.sh counts them), one line per feature in the style of Go's
// own api/go1.txt:
//
//	pkg agentbreaker/breaker, func New(Config) (*Breaker, error)
//	pkg agentbreaker/breaker, method (*Breaker) Allow() (Permit, error)
//	pkg agentbreaker/breaker, const CauseOperator Cause
//	pkg agentbreaker/breaker, const CauseOperator = 7
//	pkg agentbreaker/a2aguard, type Config struct, Timeout time.Duration
//
// .ci/api.sh compares what it prints with the committed api/baseline.txt, and
// `bash .ci/api.sh -update` rewrites that file from it.
//
// A package of this module is named by its path with "github.com/agentbreaker/" cut
// off (agentbreaker, agentbreaker/breaker); every other package by its full import
// path. Parameter names, struct tags and doc comments are not features: renaming a
// parameter changes no line. A method is listed on the receiver it is declared with.
// An embedded field of an exported type from a public package or a dependency is one
// "embedded" line, since that type's own lines (or its module) cover what it
// promotes; the fields and methods promoted from an unexported type or one in an
// internal package are listed as the outer type's, since a user reaches them only
// there. testdata/fix.txt shows each kind of line, listed from testdata/fix.
//
// The types come from the export data `go list -export` leaves in the build cache, for
// GOOS and GOARCH as the go command sees them, and default build tags: a file behind a
// build constraint (breaker's hooks_on.go) counts only if it builds by default.
//
//	go -C test run ./apicheck ..   (from the repository root)
package main
