package fleet_test

import (
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/fleet"
)

func TestConfigErrorsNameFieldAndValue(t *testing.T) {
	ok := fleet.Config{Addr: "127.0.0.1:6379", App: "agent"}
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	tests := []struct {
		name      string
		edit      func(*fleet.Config)
		wantField string
		wantValue any
	}{
		{"no addr", func(c *fleet.Config) { c.Addr = "" }, "Addr", ""},
		{"addr without port", func(c *fleet.Config) { c.Addr = "redis" }, "Addr", "redis"},
		{"no app", func(c *fleet.Config) { c.App = "" }, "App", ""},
		{"app with a newline", func(c *fleet.Config) { c.App = "a\nb" }, "App", "a\nb"},
		{"replica with a tab", func(c *fleet.Config) { c.Replica = "r\t1" }, "Replica", "r\t1"},
		{"negative db", func(c *fleet.Config) { c.DB = -1 }, "DB", -1},
		{"interval too short", func(c *fleet.Config) { c.SyncInterval = 10 * time.Millisecond }, "SyncInterval", 10 * time.Millisecond},
		{"interval too long", func(c *fleet.Config) { c.SyncInterval = time.Minute }, "SyncInterval", time.Minute},
		{"timeout past the interval", func(c *fleet.Config) { c.OpTimeout = time.Second }, "OpTimeout", time.Second},
		{"timeout negative", func(c *fleet.Config) { c.OpTimeout = -time.Second }, "OpTimeout", -time.Second},
		{"ttl too short", func(c *fleet.Config) { c.KeyTTL = time.Second }, "KeyTTL", time.Second},
		{"history too short", func(c *fleet.Config) { c.HistoryLen = 2 }, "HistoryLen", 2},
		{"addr and client", func(c *fleet.Config) { c.Client = client }, "Client", "*redis.Client"},
		{"nil cluster client", func(c *fleet.Config) { c.Addr, c.Client = "", (*redis.ClusterClient)(nil) }, "Client", "(*redis.ClusterClient)(nil)"},
		{"username with client", func(c *fleet.Config) { c.Addr, c.Client, c.Username = "", client, "u" }, "Username", "u"},
		{"password with client", func(c *fleet.Config) { c.Addr, c.Client, c.Password = "", client, "secret" }, "Password", "(set)"},
		{"db with client", func(c *fleet.Config) { c.Addr, c.Client, c.DB = "", client, 2 }, "DB", 2},
		{"tls with client", func(c *fleet.Config) { c.Addr, c.Client, c.TLS = "", client, &tls.Config{} }, "TLS", "(set)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.edit(&cfg)
			f, err := fleet.New(cfg)
			require.Nil(t, f)
			var ce *agentbreaker.ConfigError
			require.True(t, errors.As(err, &ce), "%v", err)
			require.Equal(t, tt.wantField, ce.Field)
			require.NotContains(t, err.Error(), "secret", "a password never reaches an error")
			require.Equal(t, "fleet", ce.Package)
			require.Equal(t, tt.wantValue, ce.Value)
		})
	}
	_, err := fleet.New(fleet.Config{App: "agent"})
	require.ErrorContains(t, err, "exactly one of Addr")
	require.ErrorContains(t, err, "Client")
	f, err := fleet.New(ok)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, f.Close(), "Close is idempotent")
}
