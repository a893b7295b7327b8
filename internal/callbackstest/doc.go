// Package callbackstest is test scaffolding shared by the library's callbacks tests
// (package callbacks_test) and the test module's callbacks tests (test/callbacks): an
// agent with tools guarded by agentbreaker's callbacks, run through the real adk-go
// runner with a scripted model and a fake clock, plus the recorders those tests read.
//
// It exists so the two test packages share one fixture instead of two copies: the test
// module cannot see another package's _test.go files, but it may import the library's
// internal packages (Go's internal rule follows import paths).
//
// It is imported by tests only. It imports no database driver, Redis client,
// prometheus or gonum, so the callbacks tests keep paying only for the core packages.
package callbackstest
