// Package redistest starts real redis-server processes for tests: a standalone server,
// a Redis Cluster of masters each with replicas, or a primary with replicas watched by
// Sentinels. Every process listens on a free loopback port, keeps its files in the
// test's temporary directory, is waited for with a deadline and is killed when the
// test ends, so that the tests run the same on a developer's machine and in CI. A
// missing redis-server skips the test, or fails it under CI=true (testenv.Command).
//
// The helpers are safe to call from parallel tests; a Server is safe for concurrent use.
//
// It has no runnable Example: an Example cannot skip, and this one would need
// redis-server installed; the fleet package's tests show its use.
package redistest
