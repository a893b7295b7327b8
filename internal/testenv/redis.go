package testenv

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultRedisAddr is used when AGENTBREAKER_REDIS_ADDR is unset.
const DefaultRedisAddr = "127.0.0.1:6379"

var (
	redisOnce sync.Once
	redisErr  error
)

// RedisAddr returns the address of the test Redis (AGENTBREAKER_REDIS_ADDR, or
// DefaultRedisAddr). When the server does not answer PING it skips t with one line, or
// fails it when CI=true. The server is tried once per test binary, with a raw PING so
// that this package needs no Redis client.
func RedisAddr(t testing.TB) string {
	t.Helper()
	addr := RedisAddrUnchecked()
	redisOnce.Do(func() { redisErr = pingRedis(addr) })
	if redisErr != nil {
		unreachable(t, "Redis", "AGENTBREAKER_REDIS_ADDR", redisErr)
	}
	return addr
}

// RedisAddrUnchecked returns the address without trying the server, for child
// processes of a test that already checked it.
func RedisAddrUnchecked() string {
	return envOr("AGENTBREAKER_REDIS_ADDR", DefaultRedisAddr)
}

func pingRedis(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return &redisReplyError{strings.TrimSpace(line)}
	}
	return nil
}

type redisReplyError struct{ reply string }

func (e *redisReplyError) Error() string { return "PING answered " + e.reply }
