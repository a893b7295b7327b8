package httptransport

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// Bulkhead caps the calls in flight to one dependency. TryAcquire takes a slot without
// waiting, returning the function that gives it back, or an error when the bulkhead is
// full. It must be safe for concurrent use. An error that implements
// classify.LocalRejection keeps its class; any other is reported as bulkhead_full.
type Bulkhead interface {
	TryAcquire() (release func(), err error)
}

// SlotBulkhead is the shape of a bulkhead that hands out slots with TryAcquire and
// takes them back with Release (agentbreaker's bulkhead package has it).
type SlotBulkhead interface {
	TryAcquire() error
	Release() bool
}

// BulkheadOf adapts a SlotBulkhead to Bulkhead; each acquired slot is released once.
func BulkheadOf(b SlotBulkhead) Bulkhead { return slotAdapter{b} }

type slotAdapter struct{ b SlotBulkhead }

func (a slotAdapter) TryAcquire() (func(), error) {
	if err := a.b.TryAcquire(); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { a.b.Release() }) }, nil
}

// Config configures a Transport.
type Config struct {
	// Base sends the requests. Defaults to http.DefaultTransport.
	Base http.RoundTripper
	// Map finds the breaker of a request's host (dependencymap.Map.ForHost, tried with
	// host:port, then the host name alone); the breaker's name is the dependency key.
	// Defaults to none: requests are classified, but no breaker is consulted.
	Map *dependencymap.Map
	// Bulkheads caps calls in flight per dependency key. A slot is held from before the
	// dial until the response body is closed or read to its end. A request refused by a
	// full bulkhead fails as FAILED_BEFORE_SEND (bulkhead_full) and counts as a failure
	// of the dependency's breaker. Defaults to none.
	Bulkheads map[string]Bulkhead
	// Classifier classifies responses and errors. Defaults to the classify package's
	// default rules.
	Classifier *classify.Classifier
	// Timeout bounds each round trip, from before the dial until the response body is
	// closed. When it fires the call counts against the dependency (an UNKNOWN timeout,
	// or FAILED_BEFORE_SEND connect_timeout when nothing was written), unlike the
	// caller's own deadline, which is neutral. Prefer it to http.Client.Timeout, which
	// the transport cannot tell from the caller's deadline. From 0 (none) to 24h.
	// Defaults to 0.
	Timeout time.Duration
	// AfterFunc starts the Timeout timer: it calls f after d unless stop is called
	// first. Defaults to time.AfterFunc; tests pass a timer they fire by hand.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// IdempotencyHeader is the header that carries the operation's idempotency key
	// (retry.IdempotencyKeyFrom on the request's context). A request that already has
	// the header keeps its own value. "-" sends none. Defaults to "Idempotency-Key".
	IdempotencyHeader string
	// Clock dates Retry-After headers given as HTTP dates, and times round trips.
	// Defaults to the system clock.
	Clock clock.Clock
	// OnResult hooks receive one Result per round trip, on the caller's goroutine,
	// outside any lock. Keep them quick. Defaults to none.
	OnResult []func(Result)
}

// DefaultIdempotencyHeader is the header the idempotency key is sent in by default.
const DefaultIdempotencyHeader = "Idempotency-Key"

func (c *Config) setDefaults() error {
	if c.Base == nil {
		c.Base = http.DefaultTransport
	}
	if c.AfterFunc == nil {
		c.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	if c.IdempotencyHeader == "" {
		c.IdempotencyHeader = DefaultIdempotencyHeader
	}
	c.Clock = clock.OrSystem(c.Clock)
	if c.Timeout < 0 || c.Timeout > 24*time.Hour {
		return &ConfigError{Package: "httptransport", Field: "Timeout", Value: c.Timeout, Problem: "must be between 0 (none) and 24h"}
	}
	if h := c.IdempotencyHeader; h != "-" && (strings.ContainsAny(h, " \t\r\n:") || http.CanonicalHeaderKey(h) == "") {
		return &ConfigError{Package: "httptransport", Field: "IdempotencyHeader", Value: h, Problem: "is not a valid header name"}
	}
	for key, b := range c.Bulkheads {
		if b == nil {
			return &ConfigError{Package: "httptransport", Field: fmt.Sprintf("Bulkheads[%q]", key), Value: "nil", Problem: "bulkhead is nil"}
		}
	}
	for i, h := range c.OnResult {
		if h == nil {
			return &ConfigError{Package: "httptransport", Field: fmt.Sprintf("OnResult[%d]", i), Value: "nil", Problem: "hook is nil"}
		}
	}
	return nil
}
