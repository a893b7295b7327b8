// Package test holds agentbreaker's integration tests that need dependencies no user
// of the library should download: a headless browser driver for the admin page, and
// the multi-process tests. It is a module of its own (the pattern of
// opentelemetry-go-contrib's test modules), so the library's go.mod stays free of them.
// Run every module's tests with ./test.sh at the repository root.
package test
