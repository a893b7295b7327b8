package fleet

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/configerr"
	"github.com/agentbreaker/agentbreaker/redact"
)

// ConfigError reports one invalid configuration value. It is the module-wide
// [agentbreaker.ConfigError].
type ConfigError = agentbreaker.ConfigError

// Config configures a Fleet.
type Config struct {
	// Addr is the Redis server, host:port: the fleet dials it with a client of its own
	// (timeouts from OpTimeout, no retries, two connections) and closes it on Close.
	// Exactly one of Addr and Client is required.
	Addr string
	// Username and Password authenticate to Redis at Addr (ACL or requirepass). Default
	// to none. With Client, set them on the client instead.
	Username, Password string
	// DB is the Redis database number at Addr. Defaults to 0. With Client, set it on
	// the client instead.
	DB int
	// TLS, when set, connects to Addr with TLS. Defaults to plain TCP. With Client, set
	// it on the client instead.
	TLS *tls.Config
	// Client is a Redis client you built, used instead of dialing Addr: a
	// *redis.Client, a *redis.ClusterClient (Redis Cluster), a failover client
	// (redis.NewFailoverClient or NewFailoverClusterClient, for Sentinel) or any
	// redis.UniversalClient, with your TLS, pools, hooks and tracing. The fleet never
	// closes it: close it yourself after Fleet.Close. Each sync still runs under a
	// context whose deadline is OpTimeout; give the client timeouts no longer than
	// that (and ContextTimeoutEnabled) so that a slow node cannot hold a sync past
	// it. Exactly one of Addr and Client is required. Defaults to none.
	Client redis.UniversalClient

	// App names the application: every replica of one agent uses the same App, and
	// agents with different Apps never share a breaker. Required; it must pass
	// redact.CheckName.
	App string
	// Map, when set, is attached at New, as AttachMap does: every breaker and throttle
	// it has, and every breaker it creates later, joins the fleet. A fleet with nothing
	// attached syncs nothing. Defaults to nil: attach breakers or maps yourself.
	Map *dependencymap.Map
	// Prefix begins every key. Defaults to "agentbreaker".
	Prefix string
	// Replica names this process in Redis (probe lease holder, window reports,
	// transition history). Defaults to host name, process id and a random suffix.
	Replica string

	// SyncInterval is how often the replica flushes its windows and reads the fleet's
	// state: every replica learns of a change within one interval. Between 50ms and 10s.
	// Defaults to 500ms.
	SyncInterval time.Duration
	// OpTimeout bounds each sync's round trip to Redis (dial included). Redis runs only
	// in the sync loop, never on a call's path; past this timeout the replica's
	// breakers decide alone until Redis answers again. Between 1ms and SyncInterval.
	// Defaults to 200ms (or SyncInterval, if that is shorter).
	OpTimeout time.Duration
	// LocalAfter is how long a breaker keeps following the fleet after its last
	// successful sync: past it (Redis down, slow or partitioned) the breaker decides
	// alone, probes included. A sync that fails once does not split the fleet. Between
	// SyncInterval+OpTimeout and 1m. Defaults to 3×SyncInterval + OpTimeout.
	LocalAfter time.Duration
	// KeyTTL is the expiry of every key, renewed once every three SyncIntervals (by the
	// sync that rescans the windows) and at every transition: when no replica has
	// synced a breaker for this long its keys vanish. Between 1m and 30 days, and more
	// than the longest cooldown you use. Defaults to 24h.
	KeyTTL time.Duration
	// HistoryLen is how many transitions each breaker's history stream keeps
	// (approximately: trimmed with MAXLEN ~). Between 10 and 100000. Defaults to 1000.
	HistoryLen int

	// Logger receives one record when Redis becomes unreachable and one when it is
	// back. Defaults to slog.Default().
	Logger *slog.Logger
}

// Defaults of Config.
const (
	defaultPrefix       = "agentbreaker"
	defaultSyncInterval = 500 * time.Millisecond
	defaultOpTimeout    = 200 * time.Millisecond
	defaultKeyTTL       = 24 * time.Hour
	defaultHistoryLen   = 1000
)

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = defaultPrefix
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = defaultSyncInterval
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = min(defaultOpTimeout, c.SyncInterval)
	}
	if c.LocalAfter == 0 {
		c.LocalAfter = 3*c.SyncInterval + c.OpTimeout
	}
	if c.KeyTTL == 0 {
		c.KeyTTL = defaultKeyTTL
	}
	if c.HistoryLen == 0 {
		c.HistoryLen = defaultHistoryLen
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "fleet", Field: field, Value: v, Problem: problem}
	}
	switch {
	case c.Addr == "" && c.Client == nil:
		return bad("Addr", c.Addr, "exactly one of Addr (host:port of the Redis server) and Client (a redis.UniversalClient) is required; both are empty")
	case c.Addr != "" && c.Client != nil:
		return bad("Client", fmt.Sprintf("%T", c.Client), fmt.Sprintf("exactly one of Addr and Client is allowed; Addr is %q too", c.Addr))
	case c.Client != nil && isNilPointer(c.Client):
		return bad("Client", fmt.Sprintf("(%T)(nil)", c.Client), "is a nil pointer")
	case c.Client != nil:
		// Fields the fleet would not read with a client of the user's: refuse them
		// rather than ignore them.
		onClient := func(field string, v any) error {
			return bad(field, v, "applies to Addr only; with Client, set it on the client")
		}
		switch {
		case c.Username != "":
			return onClient("Username", c.Username)
		case c.Password != "":
			return onClient("Password", "(set)")
		case c.DB != 0:
			return onClient("DB", c.DB)
		case c.TLS != nil:
			return onClient("TLS", "(set)")
		}
	default:
		if _, port, err := net.SplitHostPort(c.Addr); err != nil || port == "" {
			return bad("Addr", c.Addr, "must be host:port")
		}
	}
	if c.App == "" {
		return bad("App", c.App, "is required: replicas of one agent share it")
	}
	if err := redact.CheckName("App", c.App); err != nil {
		return configerr.Relabel(err, "fleet", "", "")
	}
	if err := redact.CheckName("Prefix", c.Prefix); err != nil {
		return configerr.Relabel(err, "fleet", "", "")
	}
	if c.Replica != "" {
		if err := redact.CheckName("Replica", c.Replica); err != nil {
			return configerr.Relabel(err, "fleet", "", "")
		}
	}
	switch {
	case c.DB < 0:
		return bad("DB", c.DB, "must not be negative")
	case c.SyncInterval < 50*time.Millisecond || c.SyncInterval > 10*time.Second:
		return bad("SyncInterval", c.SyncInterval, "must be between 50ms and 10s")
	case c.OpTimeout < time.Millisecond || c.OpTimeout > c.SyncInterval:
		return bad("OpTimeout", c.OpTimeout, "must be between 1ms and SyncInterval ("+c.SyncInterval.String()+")")
	case c.LocalAfter < c.SyncInterval+c.OpTimeout || c.LocalAfter > time.Minute:
		return bad("LocalAfter", c.LocalAfter, "must be between SyncInterval+OpTimeout ("+(c.SyncInterval+c.OpTimeout).String()+") and 1m")
	case c.KeyTTL < time.Minute || c.KeyTTL > 30*24*time.Hour:
		return bad("KeyTTL", c.KeyTTL, "must be between 1m and 720h")
	case c.HistoryLen < 10 || c.HistoryLen > 100000:
		return bad("HistoryLen", c.HistoryLen, "must be between 10 and 100000")
	}
	return nil
}

func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
