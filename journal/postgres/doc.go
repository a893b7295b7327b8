// Package postgres keeps the dispatch-intent journal in PostgreSQL, with
// github.com/jackc/pgx, for fleets of agents that share one database. Import it only
// where the journal is opened: it is the only package that links the driver.
//
//	j, err := journal.Open(ctx, journal.Config{Backend: postgres.Backend{DSN: os.Getenv("JOURNAL_DSN")}})
package postgres
