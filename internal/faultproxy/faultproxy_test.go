package faultproxy

import (
	"bufio"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// echo serves lines back to the sender.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if _, err := c.Write([]byte(sc.Text() + "\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func roundTrip(addr string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, err
	}
	if line != "ping\n" {
		return 0, net.UnknownNetworkError(line)
	}
	return time.Since(start), nil
}

func TestModes(t *testing.T) {
	p, err := New(echo(t))
	require.NoError(t, err)
	defer p.Close()

	_, err = roundTrip(p.Addr(), 2*time.Second)
	require.NoError(t, err, "pass")

	for _, m := range []Mode{Cut, Reset, BlackHole} {
		p.Set(m)
		_, err = roundTrip(p.Addr(), 200*time.Millisecond)
		require.Error(t, err, m.String())
	}

	p.SetDelay(100 * time.Millisecond)
	took, err := roundTrip(p.Addr(), 5*time.Second)
	require.NoError(t, err, "delay")
	require.GreaterOrEqual(t, took, 200*time.Millisecond, "a chunk each way, each held 100ms")

	p.Set(Pass)
	_, err = roundTrip(p.Addr(), 2*time.Second)
	require.NoError(t, err, "pass again")
}

// An open connection is ended by Cut and reset by Reset.
func TestCutEndsOpenConnections(t *testing.T) {
	p, err := New(echo(t))
	require.NoError(t, err)
	defer p.Close()
	for _, m := range []Mode{Cut, Reset} {
		p.Set(Pass)
		c, err := net.Dial("tcp", p.Addr())
		require.NoError(t, err)
		r := bufio.NewReader(c)
		_, err = c.Write([]byte("a\n"))
		require.NoError(t, err)
		_, err = r.ReadString('\n')
		require.NoError(t, err)
		p.Set(m)
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		_, err = r.ReadString('\n')
		require.Error(t, err, m.String())
		var ne net.Error
		if errors.As(err, &ne) {
			require.False(t, ne.Timeout(), "%s: the connection must end, not hang", m)
		}
		c.Close()
	}
}
