package payloads_test

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/payloads"
)

func TestCacheConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     payloads.CacheConfig
		wantErr string
	}{
		{"no tools", payloads.CacheConfig{}, "payloads: CacheConfig.Tools = []: is empty"},
		{"empty tool", payloads.CacheConfig{Tools: []string{"a", ""}}, `payloads: CacheConfig.Tools[1] = "": tool name is empty`},
		{"negative ttl", payloads.CacheConfig{Tools: []string{"a"}, TTL: -time.Second}, "payloads: CacheConfig.TTL = -1s"},
		{"ttl too long", payloads.CacheConfig{Tools: []string{"a"}, TTL: 48 * time.Hour}, "CacheConfig.TTL = 48h0m0s"},
		{"negative size", payloads.CacheConfig{Tools: []string{"a"}, MaxEntries: -1}, "payloads: CacheConfig.MaxEntries = -1: must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := payloads.NewCache(tt.cfg)
			require.Nil(t, c)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	require.Panics(t, func() { payloads.MustNewCache(payloads.CacheConfig{}) })
}

func TestCacheServesFreshAnswersOnly(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Time{})
	c := payloads.MustNewCache(payloads.CacheConfig{Tools: []string{"price"}, TTL: 30 * time.Minute, Clock: clk})
	args := map[string]any{"sku": "A1", "currency": "EUR"}
	require.True(t, c.Put("price", args, map[string]any{"price": 42}))
	require.False(t, c.Put("send_email", args, map[string]any{"sent": true}), "only listed tools are cached")
	require.False(t, c.Put("price", map[string]any{"bad": math.Inf(1)}, map[string]any{}), "arguments must encode")
	require.False(t, c.Put("price", args, map[string]any{"bad": make(chan int)}), "results must encode")

	clk.Advance(20 * time.Minute)
	got, ok := c.Get("price", map[string]any{"currency": "EUR", "sku": "A1"})
	require.True(t, ok, "argument order does not matter")
	require.Equal(t, 20*time.Minute, got.Age)
	require.Equal(t, map[string]any{"price": float64(42)}, got.Result)
	got.Result["price"] = 0.0
	again, _ := c.Get("price", args)
	require.Equal(t, float64(42), again.Result["price"], "each Get is a fresh copy")

	_, ok = c.Get("price", map[string]any{"sku": "B2"})
	require.False(t, ok)
	_, ok = c.Get("send_email", args)
	require.False(t, ok)

	clk.Advance(10 * time.Minute)
	_, ok = c.Get("price", args)
	require.False(t, ok, "expired at the TTL")
	require.Equal(t, 0, c.Len(), "expired entries are dropped when seen")
}

func TestCacheEvictsTheOldest(t *testing.T) {
	t.Parallel()
	c := payloads.MustNewCache(payloads.CacheConfig{Tools: []string{"t"}, MaxEntries: 3, Clock: clock.NewFake(time.Time{})})
	for i := range 5 {
		c.Put("t", map[string]any{"i": i}, map[string]any{"v": i})
	}
	require.Equal(t, 3, c.Len())
	for i := range 5 {
		_, ok := c.Get("t", map[string]any{"i": i})
		require.Equal(t, i >= 2, ok, "entry %d", i)
	}
	c.Put("t", map[string]any{"i": 2}, map[string]any{"v": "new"}) // refresh moves it to the front
	c.Put("t", map[string]any{"i": 9}, map[string]any{"v": 9})
	_, ok := c.Get("t", map[string]any{"i": 3})
	require.False(t, ok, "3 was the oldest after 2 was refreshed")
	got, ok := c.Get("t", map[string]any{"i": 2})
	require.True(t, ok)
	require.Equal(t, "new", got.Result["v"])
}

func TestCacheConcurrentUse(t *testing.T) {
	t.Parallel()
	c := payloads.MustNewCache(payloads.CacheConfig{Tools: []string{"t"}, MaxEntries: 50})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				args := map[string]any{"k": (g*500 + i) % 80}
				c.Put("t", args, map[string]any{"g": g})
				if got, ok := c.Get("t", args); ok {
					if _, ok := got.Result["g"]; !ok {
						panic(fmt.Sprint("corrupt entry ", got.Result))
					}
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, c.Len(), 50)
}
