// Package docs keeps the figures of README.md and docs/*.md equal to what the commands
// that print them print. Its test runs every command a page marks and compares; with
// -update it rewrites the pages in place:
//
//	go test ./docs            # from test/: fails on the first figure that drifted
//	go test ./docs -update    # rewrites the marked blocks, inline figures and files
//
// The markers are described in docs/CONTRIBUTING-docs.md.
package docs
