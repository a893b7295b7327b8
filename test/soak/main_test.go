// Package soak runs the whole stack for a while under load and faults (issue 46) and
// checks that nothing is lost and nothing grows: see docs/soak.md.
//
//	go -C test test ./soak -run TestSoak -v                  # the short run CI does (about 100 s)
//	go -C test test ./soak -run TestSoak -v -soak=30m -timeout=40m -soak-page ../docs/soak.md
package soak

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

var (
	soakFor   = flag.Duration("soak", 0, "how long to soak; 0 runs the short version (-soak-short)")
	soakShort = flag.Duration("soak-short", 0, "length of the short version; 0 means 100s")
	soakSeed  = flag.Int64("soak-seed", 0, "seed of the fault schedule; 0 picks one (printed)")
	soakPage  = flag.String("soak-page", "", "write the figures onto this page (docs/soak.md)")
	soakConc  = flag.Int("soak-sessions", 8, "concurrent sessions")
)

func TestMain(m *testing.M) {
	switch os.Getenv(soakRoleEnv) {
	case "world":
		runWorld()
		return
	case "replica":
		redis.SetLogger(quietRedis{})
		runReplicaChild()
		return
	}
	// go-redis logs every failed dial of its pool to stderr (each sync while the
	// schedule has Redis down); the fleet reports outages itself, once each.
	redis.SetLogger(quietRedis{})
	os.Exit(m.Run())
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func pgxConnect(ctx context.Context, dsn string) (*pgx.Conn, error) { return pgx.Connect(ctx, dsn) }
