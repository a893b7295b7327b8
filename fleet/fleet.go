package fleet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/attach"
	"github.com/agentbreaker/agentbreaker/internal/fleetlink"
	"github.com/agentbreaker/agentbreaker/redact"
)

// ErrClosed is returned by Attach after Close.
var ErrClosed = errors.New("fleet: closed")

// Fleet shares the state of breakers across the replicas of one application through
// Redis. It is safe for concurrent use.
//
// Calls never touch Redis: a breaker attached to a fleet decides every call locally, as
// it does alone, and one goroutine per Fleet syncs every SyncInterval (and at once when
// a breaker trips, settles a probe or is operated). When Redis cannot be reached the
// breakers decide alone until it answers again.
type Fleet struct {
	cfg     Config
	rdb     redis.UniversalClient
	own     bool // rdb was built by New from Addr: Close closes it
	wake    chan struct{}
	syncReq chan chan struct{} // a sync to run now, closed when it has run (syncNow)
	done    chan struct{}
	stopped chan struct{}
	once    sync.Once

	mu      sync.Mutex // guards the fields below
	closed  bool
	members []*member
	byName  map[string]*member
	maps    []*dependencymap.Map
	// throttles are the attached throttles (AttachThrottle), synced in the same round.
	throttles []*throttleMember
	// versions are the replicas' policy versions at the last sync (PolicyVersions).
	versions atomic.Pointer[reported]

	// Loop only.
	answered bool // some sync has reached Redis since New
	down     bool // the last sync failed, wholly or for some breakers
	downAt   time.Time

	stats struct {
		syncs, failures, outages, commands, published, lost, leases atomic.Int64
		byClass                                                     [len(errorClasses)]atomic.Int64
	}
}

// member is one attached breaker.
type member struct {
	b       *breaker.Breaker
	keys    []string
	version string // the policy version keys were made for
	gen     int64  // the fleet generation last applied; -1 before the first sync
	// republish is set when Redis lost the breaker's state (restarted without its data,
	// keys deleted): the next sync publishes the breaker's state again.
	republish bool

	mu     sync.Mutex // guards status
	status Status
}

// New connects nothing yet: it validates cfg and starts the sync loop, which dials
// Redis on its first sync. It returns a *ConfigError naming the first invalid field.
func New(cfg Config) (*Fleet, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Replica == "" {
		host, _ := os.Hostname()
		cfg.Replica = fmt.Sprintf("%s-%d-%08x", host, os.Getpid(), rand.Uint32())
	}
	f := &Fleet{
		cfg:     cfg,
		wake:    make(chan struct{}, 1),
		syncReq: make(chan chan struct{}),
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
		byName:  map[string]*member{},
	}
	if cfg.Client != nil {
		f.rdb = cfg.Client
	} else {
		f.own = true
		f.rdb = redis.NewClient(&redis.Options{
			Addr:                  cfg.Addr,
			Username:              cfg.Username,
			Password:              cfg.Password,
			DB:                    cfg.DB,
			TLSConfig:             cfg.TLS,
			DialTimeout:           cfg.OpTimeout,
			DialerRetries:         1,
			ReadTimeout:           cfg.OpTimeout,
			WriteTimeout:          cfg.OpTimeout,
			ContextTimeoutEnabled: true,
			MaxRetries:            -1, // a retry would outlast OpTimeout; the next sync retries
			PoolSize:              2,
			PoolTimeout:           cfg.OpTimeout,
			DisableIdentity:       true,
			MaintNotificationsConfig: &maintnotifications.Config{
				Mode: maintnotifications.ModeDisabled,
			},
		})
	}
	go f.loop()
	if cfg.Map != nil {
		if err := f.AttachMap(cfg.Map); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Fleet {
	f, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return f
}

// Replica returns the name this replica goes by in Redis.
func (f *Fleet) Replica() string { return f.cfg.Replica }

// Attach shares b's state with the fleet from the next sync on. A breaker belongs to
// one fleet at a time, and a fleet holds one breaker per name. Operating an attached
// breaker (ForceOpen, ForceClosed, Reset) applies to the whole fleet. AttachMap, unlike
// Attach, syncs before it returns.
func (f *Fleet) Attach(b *breaker.Breaker) error { return f.attach(b) }

func (f *Fleet) attach(b *breaker.Breaker) error {
	if err := redact.CheckName("breaker name", b.Name()); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if other, ok := f.byName[b.Name()]; ok {
		if other.b == b {
			return nil
		}
		return fmt.Errorf("fleet: a breaker named %q is already attached", b.Name())
	}
	if err := fleetlink.Attach(b, f.poke); err != nil {
		return err
	}
	m := &member{b: b, keys: f.keys(b), version: b.Policy().Version, gen: -1}
	m.status = Status{Breaker: b.Name()}
	f.members = append(f.members, m)
	f.byName[b.Name()] = m
	f.poke()
	return nil
}

// AttachMap attaches every breaker of m, now and as m creates them on demand, and
// every throttle of m (AttachThrottle), so code that builds its breakers through a
// dependencymap (the callbacks plugin, model failover) joins the fleet without other
// changes. It syncs them before it returns, and a breaker m makes later before the call
// that made it gets it (waiting at most about twice OpTimeout each time): a breaker
// that joins during an outage the fleet knows admits no call before it learns of it.
func (f *Fleet) AttachMap(m *dependencymap.Map) error {
	for _, b := range m.Breakers() {
		if err := f.attach(b); err != nil {
			return err
		}
	}
	// A breaker the map makes on demand is synced before the call that made it gets
	// it, as those attached here are before AttachMap returns.
	attach.Add(m, func(b *breaker.Breaker) {
		if f.attach(b) == nil {
			f.syncNow()
		}
	})
	defer f.syncNow()
	for _, th := range m.Throttles() { // a map's throttles are all made by New
		if err := f.AttachThrottle(th); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	f.maps = append(f.maps, m)
	return nil
}

// Close stops the sync loop and detaches every breaker, which decide alone from then
// on. It does not touch the fleet's state in Redis, and it closes the Redis client only
// if New built it from Addr (a Config.Client stays open). Close is idempotent.
func (f *Fleet) Close() error {
	f.once.Do(func() {
		f.mu.Lock()
		f.closed = true
		f.mu.Unlock()
		close(f.done)
		<-f.stopped
		f.mu.Lock()
		for _, m := range f.members {
			fleetlink.Detach(m.b)
		}
		f.mu.Unlock()
		if f.own {
			_ = f.rdb.Close()
		}
	})
	return nil
}

// syncNow has the loop run a sync now and waits for it, at most about twice
// OpTimeout (a sync in progress finishes first), or until the fleet closes.
func (f *Fleet) syncNow() {
	done := make(chan struct{})
	t := time.NewTimer(2*f.cfg.OpTimeout + 50*time.Millisecond)
	defer t.Stop()
	select {
	case f.syncReq <- done:
	case <-f.done:
		return
	case <-t.C:
		return
	}
	select {
	case <-done:
	case <-f.done:
	case <-t.C:
	}
}

// poke asks the loop for a sync soon. It never blocks: it may run under a breaker's lock.
func (f *Fleet) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}
