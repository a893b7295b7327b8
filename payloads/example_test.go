package payloads_test

import (
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// The payload an open breaker hands the model: plain words, composed from the failure
// class only.
func ExampleUnavailable() {
	m := payloads.Unavailable(payloads.Info{
		Dependency: "enrichment",
		Tool:       "enrich_company",
		Class:      classify.ClassTimeout,
		RetryAfter: 30 * time.Second,
	})
	fmt.Println(m["response_type"], m["status"], m["error_class"], m["retry_advised"], m["retry_after_seconds"])
	fmt.Println(m["reason"])
	fmt.Println(m["instruction"])
	// Output:
	// agentbreaker.unavailable unavailable timeout false 30
	// enrichment is temporarily unavailable: recent requests to it timed out. It may be tried again in about 30 seconds.
	// Do not call this tool again now. Tell the user this information is unavailable at the moment and continue without it.
}

// A cache of last-good answers lets the payload say "as of 20 minutes ago".
func ExampleCache() {
	clk := clock.NewFake(time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC))
	cache := payloads.MustNewCache(payloads.CacheConfig{Tools: []string{"get_price"}, TTL: time.Hour, Clock: clk})
	args := map[string]any{"sku": "A1"}
	cache.Put("get_price", args, map[string]any{"price": 42})

	clk.Advance(20 * time.Minute) // the pricing service goes down
	cached, _ := cache.Get("get_price", args)
	m := payloads.Unavailable(payloads.Info{Dependency: "pricing", Cached: &cached})
	fmt.Println(m["cached_result"], m["cached_age_seconds"], m["cached_as_of"])
	fmt.Println(m["reason"])
	// Output:
	// map[price:42] 1200 2026-03-01T14:00:00Z
	// pricing is temporarily unavailable: it is not accepting requests right now. A cached answer from 20 minutes ago is included.
}
