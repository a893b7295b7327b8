package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// MasterName is the name the sentinels of StartSentinel monitor.
const MasterName = "agentbreaker"

// SentinelDownAfter is the sentinels' down-after-milliseconds: a primary silent for
// this long is failed over.
const SentinelDownAfter = 1000 * time.Millisecond

// Sentinel is a primary with its replicas, watched by sentinels, on loopback.
type Sentinel struct {
	Primary   *Server
	Replicas  []*Server
	Sentinels []*Server
	servers   []*Server
}

// StartSentinel starts a primary, its replicas and sentinels (redis-server --sentinel,
// the program Debian's redis-sentinel package runs) monitoring it under MasterName with
// a quorum of a majority, and returns once every replica's link is up and every
// sentinel knows every replica and every other sentinel. Every process is killed when
// t ends.
func StartSentinel(t testing.TB, replicas, sentinels int) *Sentinel {
	t.Helper()
	bin := testenv.Command(t, "redis-server", "redis-server")
	dir := t.TempDir()
	s := &Sentinel{}
	s.Primary = start(t, bin, dir, false, func(int) []string { return nil })
	for range replicas {
		s.Replicas = append(s.Replicas, start(t, bin, dir, false, func(int) []string {
			return []string{"--replicaof", "127.0.0.1", strconv.Itoa(s.Primary.Port)}
		}))
	}
	s.servers = append([]*Server{s.Primary}, s.Replicas...)
	quorum := sentinels/2 + 1
	for i := range sentinels {
		conf := filepath.Join(dir, fmt.Sprintf("sentinel-%d.conf", i))
		text := fmt.Sprintf("sentinel resolve-hostnames no\n"+
			"sentinel monitor %s 127.0.0.1 %d %d\n"+
			"sentinel down-after-milliseconds %s %d\n"+
			"sentinel failover-timeout %s 5000\n"+
			"sentinel parallel-syncs %s 1\n",
			MasterName, s.Primary.Port, quorum, MasterName, SentinelDownAfter.Milliseconds(), MasterName, MasterName)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		s.Sentinels = append(s.Sentinels, start(t, bin, dir, false, func(int) []string {
			return []string{conf, "--sentinel"}
		}))
	}
	for _, r := range s.Replicas {
		waitFor(t, StartTimeout, "replica "+r.Addr+" synced", func() (bool, string) {
			st := infoField(r.Addr, "replication", "master_link_status")
			return st == "up", st
		})
	}
	for _, sn := range s.Sentinels {
		waitFor(t, StartTimeout, "sentinel "+sn.Addr+" knows the replicas and the other sentinels", func() (bool, string) {
			rs, _ := command(sn.Addr, "SENTINEL", "REPLICAS", MasterName)
			ss, _ := command(sn.Addr, "SENTINEL", "SENTINELS", MasterName)
			nr, ns := countField(rs, "ip"), countField(ss, "ip")
			return nr == len(s.Replicas) && ns == len(s.Sentinels)-1, fmt.Sprintf("%d replicas, %d other sentinels", nr, ns)
		})
	}
	return s
}

// SentinelAddrs returns the sentinels' addresses.
func (s *Sentinel) SentinelAddrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, n := range s.Sentinels {
		out[i] = n.Addr
	}
	return out
}

// MasterAddr returns the primary's address as the first sentinel that answers says.
func (s *Sentinel) MasterAddr() string {
	for _, sn := range s.Sentinels {
		if !sn.Alive() {
			continue
		}
		text, err := command(sn.Addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName)
		if err != nil {
			continue
		}
		f := strings.Fields(text)
		if len(f) == 2 {
			return f[0] + ":" + f[1]
		}
	}
	return ""
}

// Server returns the primary or replica listening on addr, or nil.
func (s *Sentinel) Server(addr string) *Server {
	for _, n := range s.servers {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// WaitFailedOver waits until every live sentinel names a live server other than old as
// the primary, and that server says it is a master.
func (s *Sentinel) WaitFailedOver(t testing.TB, old *Server, limit time.Duration) *Server {
	t.Helper()
	var primary *Server
	waitFor(t, limit, "the sentinels promote a replica", func() (bool, string) {
		primary = nil
		for _, sn := range s.Sentinels {
			if !sn.Alive() {
				continue
			}
			text, err := command(sn.Addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName)
			f := strings.Fields(text)
			if err != nil || len(f) != 2 {
				return false, fmt.Sprint(err)
			}
			p := s.Server(f[0] + ":" + f[1])
			if p == nil || p == old || !p.Alive() || (primary != nil && p != primary) {
				return false, sn.Addr + " names " + f[0] + ":" + f[1]
			}
			primary = p
		}
		role := infoField(primary.Addr, "replication", "role")
		return role == "master", primary.Addr + " role " + role
	})
	return primary
}

// countField counts the entries of a flattened SENTINEL REPLICAS or SENTINELS reply by
// counting its lines equal to field.
func countField(reply, field string) int {
	n := 0
	for _, l := range strings.Split(reply, "\n") {
		if l == field {
			n++
		}
	}
	return n
}
