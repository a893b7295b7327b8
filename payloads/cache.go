package payloads

import (
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/clock"
)

// ConfigError is the error NewCache returns for an invalid value.
type ConfigError = agentbreaker.ConfigError

// ErrNoTools is what the *ConfigError NewCache returns unwraps to when
// CacheConfig.Tools is empty.
var ErrNoTools = errors.New("payloads: CacheConfig.Tools is empty")

// CacheConfig configures a [Cache].
type CacheConfig struct {
	// Tools are the tools whose answers may be replayed. Required: list only tools that
	// read (a cached "email sent" would be a lie).
	Tools []string
	// TTL is how long an answer may be offered. Defaults to 15 minutes; at most 24h.
	TTL time.Duration
	// MaxEntries bounds the cache; the least recently stored answer goes first.
	// Defaults to 1000.
	MaxEntries int
	// Clock tells the time. Defaults to the system clock.
	Clock clock.Clock
}

// Cached is a last-good answer offered in a payload.
type Cached struct {
	// Result is the answer, a fresh copy for each caller.
	Result map[string]any
	// Age is how long ago it was stored.
	Age time.Duration
	// StoredAt is when it was stored.
	StoredAt time.Time
}

// Cache keeps the last good result per tool and arguments, so an open breaker can
// answer "as of 20 minutes ago" instead of nothing. It is safe for concurrent use.
//
// Results are stored as JSON and decoded afresh on every Get, so no caller can change
// what another receives, and only JSON-representable results are kept.
type Cache struct {
	ttl   time.Duration
	max   int
	clk   clock.Clock
	tools map[string]bool

	mu      sync.Mutex
	entries map[string]*list.Element
	order   *list.List // front = most recently stored
}

type cacheEntry struct {
	key  string
	data []byte
	at   time.Time
}

// NewCache returns a cache, or a *ConfigError naming the invalid field and value.
func NewCache(cfg CacheConfig) (*Cache, error) {
	bad := func(field string, v any, problem string) error {
		return &ConfigError{Package: "payloads", Field: field, Value: v, Problem: problem}
	}
	if len(cfg.Tools) == 0 {
		return nil, &ConfigError{Package: "payloads", Field: "CacheConfig.Tools", Value: cfg.Tools,
			Problem: "is empty: list the tools whose answers may be replayed", Err: ErrNoTools}
	}
	if cfg.TTL == 0 {
		cfg.TTL = 15 * time.Minute
	}
	if cfg.TTL < 0 || cfg.TTL > 24*time.Hour {
		return nil, bad("CacheConfig.TTL", cfg.TTL, "must be between 0 (default 15m) and 24h")
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = 1000
	}
	if cfg.MaxEntries < 0 {
		return nil, bad("CacheConfig.MaxEntries", cfg.MaxEntries, "must be positive")
	}
	tools := make(map[string]bool, len(cfg.Tools))
	for i, t := range cfg.Tools {
		if t == "" {
			return nil, bad(fmt.Sprintf("CacheConfig.Tools[%d]", i), t, "tool name is empty")
		}
		tools[t] = true
	}
	return &Cache{
		ttl:     cfg.TTL,
		max:     cfg.MaxEntries,
		clk:     clock.OrSystem(cfg.Clock),
		tools:   tools,
		entries: map[string]*list.Element{},
		order:   list.New(),
	}, nil
}

// MustNewCache is NewCache that panics on error.
func MustNewCache(cfg CacheConfig) *Cache {
	c, err := NewCache(cfg)
	if err != nil {
		panic(err)
	}
	return c
}

// Caches reports whether answers of tool are kept.
func (c *Cache) Caches(tool string) bool { return c != nil && c.tools[tool] }

// key encodes tool and arguments; encoding/json sorts map keys, so equal arguments
// give equal keys.
func key(tool string, args map[string]any) (string, bool) {
	b, err := json.Marshal(args)
	if err != nil {
		return "", false
	}
	return tool + "\x00" + string(b), true
}

// Put stores a good result. It reports false when the tool is not cached or the
// arguments or result cannot be encoded as JSON.
func (c *Cache) Put(tool string, args, result map[string]any) bool {
	if !c.Caches(tool) || result == nil {
		return false
	}
	k, ok := key(tool, args)
	if !ok {
		return false
	}
	data, err := json.Marshal(result)
	if err != nil {
		return false
	}
	now := c.clk.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		e := el.Value.(*cacheEntry)
		e.data, e.at = data, now
		c.order.MoveToFront(el)
		return true
	}
	c.entries[k] = c.order.PushFront(&cacheEntry{key: k, data: data, at: now})
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry).key)
	}
	return true
}

// Get returns the stored answer for tool and args if it is younger than the TTL.
func (c *Cache) Get(tool string, args map[string]any) (Cached, bool) {
	if !c.Caches(tool) {
		return Cached{}, false
	}
	k, ok := key(tool, args)
	if !ok {
		return Cached{}, false
	}
	now := c.clk.Now()
	c.mu.Lock()
	el, ok := c.entries[k]
	if !ok {
		c.mu.Unlock()
		return Cached{}, false
	}
	e := el.Value.(*cacheEntry)
	age := now.Sub(e.at)
	if age >= c.ttl {
		c.order.Remove(el)
		delete(c.entries, k)
		c.mu.Unlock()
		return Cached{}, false
	}
	data, at := e.data, e.at
	c.mu.Unlock()
	var result map[string]any
	if json.Unmarshal(data, &result) != nil {
		return Cached{}, false
	}
	return Cached{Result: result, Age: max(age, 0), StoredAt: at}, true
}

// Len returns how many answers are stored, expired ones included until looked up.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
