package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/fleet"
)

// The fleet benchmarks need a Redis (AGENTBREAKER_REDIS_ADDR, default 127.0.0.1:6379);
// they skip without one. They compare, on the same Redis:
//
//   - BenchmarkFleetClosed: one healthy call (Allow, then Success) on a breaker alone,
//     on a breaker attached to a fleet (the sync loop running), and through gobreaker
//     v2's DistributedCircuitBreaker, whose SharedDataStore is implemented below over
//     go-redis; redis-roundtrips/op counts the commands each call sends;
//   - BenchmarkFleetRedisOps: Redis commands per replica per second while calls are
//     paced at 100, 1,000 and 10,000 calls/s, for the fleet and for gobreaker.

func redisAddr(b *testing.B) string {
	addr := os.Getenv("AGENTBREAKER_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		b.Skipf("Redis unreachable at %s (set AGENTBREAKER_REDIS_ADDR): %v", addr, err)
	}
	return addr
}

// benchApp is a fresh application name: runs never share keys. Its keys expire.
func benchApp() string { return fmt.Sprintf("bench-%08x", rand.Uint32()) }

// newFleetBreaker returns a breaker with the shared gates attached to a fleet that has
// synced it, and the fleet.
func newFleetBreaker(b *testing.B, addr string) (*breaker.Breaker, *fleet.Fleet) {
	f, err := fleet.New(fleet.Config{Addr: addr, App: benchApp(), Prefix: "abbench",
		KeyTTL: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	br := newAgentbreaker(b, cooldown, nil)
	if err := f.Attach(br); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "the breaker is fleet-wide", func() bool {
		s, _ := f.Status(br.Name())
		return s.FleetWide
	})
	return br, f
}

// redisStore is gobreaker's SharedDataStore over go-redis: a lock is SET NX with a
// expiry, data is a plain string. It counts the commands it sends.
type redisStore struct {
	c        *redis.Client
	prefix   string
	commands atomic.Int64
}

var errLocked = errors.New("bench: gobreaker lock is taken")

func (s *redisStore) Lock(name string) error {
	s.commands.Add(1)
	ok, err := s.c.SetNX(context.Background(), s.prefix+name, "1", 5*time.Second).Result()
	if err != nil {
		return err
	}
	if !ok {
		return errLocked
	}
	return nil
}

func (s *redisStore) Unlock(name string) error {
	s.commands.Add(1)
	return s.c.Del(context.Background(), s.prefix+name).Err()
}

func (s *redisStore) GetData(name string) ([]byte, error) {
	s.commands.Add(1)
	v, err := s.c.Get(context.Background(), s.prefix+name).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

func (s *redisStore) SetData(name string, data []byte) error {
	s.commands.Add(1)
	return s.c.Set(context.Background(), s.prefix+name, data, time.Minute).Err()
}

func newDistributedGobreaker(b *testing.B, addr string) (*gobreaker.DistributedCircuitBreaker[result], *redisStore) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { c.Close() })
	store := &redisStore{c: c, prefix: benchApp() + ":"}
	cb, err := gobreaker.NewDistributedCircuitBreaker[result](store, gobreakerSettings(cooldown))
	if err != nil {
		b.Fatal(err)
	}
	return cb, store
}

func BenchmarkFleetClosed(b *testing.B) {
	addr := redisAddr(b)
	b.Run("agentbreaker-local", func(b *testing.B) {
		b.ReportAllocs()
		br := newAgentbreaker(b, cooldown, nil)
		for b.Loop() {
			p, err := br.Allow()
			if err != nil {
				b.Fatal(err)
			}
			p.Success()
		}
		b.ReportMetric(0, "redis-roundtrips/op")
	})
	b.Run("agentbreaker-fleet", func(b *testing.B) {
		b.ReportAllocs()
		br, f := newFleetBreaker(b, addr)
		before := f.Stats().Commands
		for b.Loop() {
			p, err := br.Allow()
			if err != nil {
				b.Fatal(err)
			}
			p.Success()
		}
		b.ReportMetric(float64(f.Stats().Commands-before)/float64(b.N), "redis-roundtrips/op")
	})
	b.Run("gobreaker-distributed", func(b *testing.B) {
		b.ReportAllocs()
		cb, store := newDistributedGobreaker(b, addr)
		before := store.commands.Load()
		for b.Loop() {
			if _, err := cb.Execute(succeed); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(store.commands.Load()-before)/float64(b.N), "redis-roundtrips/op")
	})
}

// paced calls call() b.N times at rate calls per second and reports the Redis
// commands sent per second, read from commands.
func paced(b *testing.B, rate int, call func(), commands func() int64) {
	period := time.Second / time.Duration(rate)
	before := commands()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		if ahead := time.Until(start.Add(time.Duration(i) * period)); ahead > time.Millisecond {
			time.Sleep(ahead)
		}
		call()
	}
	elapsed := time.Since(start).Seconds()
	b.ReportMetric(float64(commands()-before)/elapsed, "redis-ops/s")
	b.ReportMetric(float64(b.N)/elapsed, "calls/s")
}

func BenchmarkFleetRedisOps(b *testing.B) {
	addr := redisAddr(b)
	for _, rate := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("agentbreaker-fleet/%d-calls-per-s", rate), func(b *testing.B) {
			br, f := newFleetBreaker(b, addr)
			paced(b, rate, func() {
				p, err := br.Allow()
				if err != nil {
					b.Fatal(err)
				}
				p.Success()
			}, func() int64 { return f.Stats().Commands })
		})
		b.Run(fmt.Sprintf("gobreaker-distributed/%d-calls-per-s", rate), func(b *testing.B) {
			cb, store := newDistributedGobreaker(b, addr)
			paced(b, rate, func() {
				if _, err := cb.Execute(succeed); err != nil {
					b.Fatal(err)
				}
			}, store.commands.Load)
		})
	}
}
