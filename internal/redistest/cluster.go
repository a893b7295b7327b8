package redistest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// ClusterNodeTimeout is the cluster-node-timeout of a test cluster: a master that does
// not answer for this long is failed over to its replica. Short, so that a test's
// failover takes a few seconds; long enough that a loaded machine does not fail a
// master over by itself.
const ClusterNodeTimeout = 1000 * time.Millisecond

// Cluster is a Redis Cluster of masters, each with its replicas, on loopback.
type Cluster struct {
	// Nodes are every node, masters and replicas, in start order.
	Nodes []*Server
}

// StartCluster starts masters × (1 + replicasEach) cluster-mode servers, joins them
// with redis-cli --cluster create (replicasEach replicas per master, the 16384 slots
// spread over the masters), and returns once every node says cluster_state:ok and every
// replica's link to its master is up. The cluster keeps serving the slots of live
// masters while one has none (cluster-require-full-coverage no), and a replica may take
// over however long its link was down (cluster-replica-validity-factor 0). Every
// process is killed when t ends.
func StartCluster(t testing.TB, masters, replicasEach int) *Cluster {
	t.Helper()
	bin := testenv.Command(t, "redis-server", "redis-server")
	dir := t.TempDir()
	c := &Cluster{}
	for range masters * (1 + replicasEach) {
		c.Nodes = append(c.Nodes, start(t, bin, dir, true, func(port int) []string {
			return []string{
				"--cluster-enabled", "yes",
				"--cluster-config-file", "nodes-" + strconv.Itoa(port) + ".conf",
				"--cluster-node-timeout", strconv.Itoa(int(ClusterNodeTimeout.Milliseconds())),
				"--cluster-require-full-coverage", "no",
				"--cluster-replica-validity-factor", "0",
			}
		}))
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicasEach), "--cluster-yes")
	runCLI(t, args...)
	c.WaitHealthy(t, StartTimeout)
	return c
}

// Addrs returns every node's address.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// Node returns the node listening on addr, or nil.
func (c *Cluster) Node(addr string) *Server {
	for _, n := range c.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// MasterOf returns the live node that serves key's slot as a master, as a live node's
// CLUSTER SLOTS says, or nil if no live master serves it.
func (c *Cluster) MasterOf(t testing.TB, key string) *Server {
	t.Helper()
	for _, n := range c.Nodes {
		if !n.Alive() {
			continue
		}
		slotText, err := command(n.Addr, "CLUSTER", "KEYSLOT", key)
		if err != nil {
			continue
		}
		slot, _ := strconv.Atoi(strings.TrimSpace(slotText))
		owner, ok := masterOfSlot(n.Addr, slot)
		if !ok {
			continue
		}
		if m := c.Node(owner); m != nil && m.Alive() {
			return m
		}
		return nil
	}
	t.Fatal("redistest: no live cluster node answers")
	return nil
}

// masterOfSlot reads CLUSTER NODES on addr and returns the address
// of the master serving slot.
func masterOfSlot(addr string, slot int) (string, bool) {
	text, err := command(addr, "CLUSTER", "NODES")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
			continue
		}
		for _, r := range f[8:] {
			lo, hi, isRange := strings.Cut(r, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				continue // an importing/migrating entry
			}
			b := a
			if isRange {
				b, _ = strconv.Atoi(hi)
			}
			if slot >= a && slot <= b {
				return strings.Split(f[1], "@")[0], true
			}
		}
	}
	return "", false
}

// WaitHealthy waits until every live node says cluster_state:ok, every slot is served
// by a live master, and every live replica's link to its master is up.
func (c *Cluster) WaitHealthy(t testing.TB, limit time.Duration) {
	t.Helper()
	waitFor(t, limit, "the cluster is healthy", func() (bool, string) {
		for _, n := range c.Nodes {
			if !n.Alive() {
				continue
			}
			if st := infoClusterState(n.Addr); st != "ok" {
				return false, n.Addr + " cluster_state " + st
			}
			if infoField(n.Addr, "replication", "role") == "slave" {
				if infoField(n.Addr, "replication", "master_link_status") != "up" {
					return false, n.Addr + " replica link down"
				}
				if m := c.Node(infoField(n.Addr, "replication", "master_host") + ":" + infoField(n.Addr, "replication", "master_port")); m == nil || !m.Alive() {
					return false, n.Addr + " replicates a dead master"
				}
			}
			for slot := 0; slot < 16384; slot += 997 {
				owner, ok := masterOfSlot(n.Addr, slot)
				if m := c.Node(owner); !ok || m == nil || !m.Alive() {
					return false, fmt.Sprintf("%s: slot %d has no live master", n.Addr, slot)
				}
			}
		}
		return true, ""
	})
}

func infoClusterState(addr string) string {
	text, err := command(addr, "CLUSTER", "INFO")
	if err != nil {
		return err.Error()
	}
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "cluster_state:"); ok {
			return v
		}
	}
	return "unknown"
}

// ManualFailover promotes a replica of master with CLUSTER FAILOVER (the coordinated
// switch an operator or a managed service makes for maintenance): the old master
// becomes its replica and answers MOVED for its slots. It returns the new master once
// it serves, and waits until the cluster is healthy.
func (c *Cluster) ManualFailover(t testing.TB, master *Server) *Server {
	t.Helper()
	id, err := command(master.Addr, "CLUSTER", "MYID")
	if err != nil {
		t.Fatalf("redistest: CLUSTER MYID on %s: %v", master.Addr, err)
	}
	id = strings.TrimSpace(id)
	var replica *Server
	text, err := command(master.Addr, "CLUSTER", "NODES")
	if err != nil {
		t.Fatalf("redistest: CLUSTER NODES on %s: %v", master.Addr, err)
	}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[3] == id && strings.Contains(f[2], "slave") {
			if n := c.Node(strings.Split(f[1], "@")[0]); n != nil && n.Alive() {
				replica = n
				break
			}
		}
	}
	if replica == nil {
		t.Fatalf("redistest: %s has no live replica", master.Addr)
	}
	if _, err := command(replica.Addr, "CLUSTER", "FAILOVER"); err != nil {
		t.Fatalf("redistest: CLUSTER FAILOVER on %s: %v", replica.Addr, err)
	}
	waitFor(t, StartTimeout, replica.Addr+" becomes a master", func() (bool, string) {
		role := infoField(replica.Addr, "replication", "role")
		return role == "master", role
	})
	c.WaitHealthy(t, StartTimeout)
	return replica
}
