// Command testreport reads `go test -json` on standard input and prints what plain
// `go test` would (each package's ok or FAIL line, a failed test's output), then one line
// for each skipped test with the reason it gave, so that a run without Redis or
// PostgreSQL says which tests did not run and why without -v. Lines that are not JSON
// (test.sh's headers, say) pass through unchanged.
//
// It exits 1 when a test, a package or a build failed, so it can end a pipeline whose
// status matters. With -v it prints every test's output, as go test -v does.
//
//	go test -json ./... | go run ./internal/testreport
package main
