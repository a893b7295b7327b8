// Package test holds agentbreaker's integration tests that need dependencies no user
// of the library should download: a headless browser driver for the admin page, the
// multi-process tests, and every test of a core package (callbacks, admission,
// journal, telemetry) that needs a journal on SQLite or PostgreSQL: `go mod tidy` in a
// user's module records what the tests of each imported package import, so a driver
// imported by such a test would reach every user's go.sum (./bench/usergraph.sh
// checks that none does). It is a module of its own (the pattern of
// opentelemetry-go-contrib's test modules), so the library's go.mod stays free of them.
// Run every module's tests with ./test.sh at the repository root.
package test
