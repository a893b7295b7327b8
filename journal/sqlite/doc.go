// Package sqlite keeps the dispatch-intent journal in one SQLite file, with
// modernc.org/sqlite (pure Go, no cgo), in WAL mode with synchronous=FULL. Import it
// only where the journal is opened: it is the only package that links the driver.
//
//	j, err := journal.Open(ctx, journal.Config{Backend: sqlite.Backend{Path: "/var/lib/agent/intents.db"}})
package sqlite
