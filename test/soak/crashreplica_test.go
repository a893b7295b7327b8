package soak

// The fourth replica runs in a child process (the test binary re-executed with
// soakRoleEnv=replica) so that the schedule can SIGKILL it mid-turn and start it again
// on the same journal: at start it reconciles what the dead one left open, then serves
// sessions like the others. It reports its counts on stdout, one JSON line a
// second; the parent sums the last line of every incarnation.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
)

const (
	soakEnvVar       = "AGENTBREAKER_SOAK_ENV"
	crashReplicaID   = replicaCount // r3
	crashSessions    = 3
	faultReplicaKill = "replica SIGKILLed+restarted"
)

// childEnv is what the parent hands the replica process.
type childEnv struct {
	Addrs       worldAddrs
	Redis, PG   string
	Prefix, App string
	HashKey     []byte
	Seed        int64
	Incarnation int
}

// childReport is one status line of the replica process.
type childReport struct {
	Incarnation        int
	Completed          int64 // turns that returned
	Answered           int64
	Leaks, Panics      int64
	FirstLeak          string
	Unanswered         []string
	ReconciledApplied  int // Reconcile at start: settled as applied
	ReconciledNot      int // settled as not applied
	ReconciledAwaiting int // left for an operator
	ReconcileError     string
	// Transitions are the breaker transitions since the previous line: the parent's
	// open-breaker check needs this replica's probes too.
	Transitions []wireTransition
}

type wireTransition struct {
	Dep      string
	From, To breaker.State
	At       int64 // unix nanos, wall time
}

// runReplicaChild is the child's main.
func runReplicaChild() {
	var env childEnv
	if err := json.Unmarshal([]byte(os.Getenv(soakEnvVar)), &env); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	obs := newObserver()
	renv := &replicaEnv{addrs: env.Addrs, redisAddr: env.Redis, pgDSN: env.PG, prefix: env.Prefix, app: env.App, hashKey: env.HashKey, obs: obs}
	var rep *replica
	var err error
	for range 50 { // PostgreSQL may be cut right now: retry for a while
		if rep, err = newReplica(ctx, renv, crashReplicaID); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		os.Exit(2)
	}
	rpt := childReport{Incarnation: env.Incarnation}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	report, err := rep.j.Reconcile(rctx)
	cancel()
	if err != nil {
		rpt.ReconcileError = err.Error()
	}
	rpt.ReconciledApplied, rpt.ReconciledNot, rpt.ReconciledAwaiting = len(report.Applied), len(report.NotApplied), len(report.Awaiting)
	r := &run{seed: env.Seed + int64(env.Incarnation)*7919, replicas: []*replica{rep}, obs: obs, faultCount: map[string]int{},
		latency: newReservoir(1), share: newReservoir(2), pluginTime: newReservoir(3)}
	for i := range crashSessions {
		go r.drive(ctx, 100*(env.Incarnation+1)+i, time.Now().Add(24*time.Hour))
	}
	out := json.NewEncoder(os.Stdout)
	sent := 0
	for {
		time.Sleep(500 * time.Millisecond)
		rpt.Completed, rpt.Answered = r.completed.Load(), r.answered.Load()
		rpt.Leaks, rpt.Panics = obs.leakCount.Load(), obs.panics.Load()
		if _, _, leaks := obs.counts(); len(leaks) > 0 {
			rpt.FirstLeak = leaks[0]
		}
		r.mu.Lock()
		rpt.Unanswered = append([]string(nil), r.unanswered...)
		r.mu.Unlock()
		rpt.Transitions = rpt.Transitions[:0]
		var trs []transition
		trs, sent = obs.transitionsSince(sent)
		for _, tr := range trs {
			rpt.Transitions = append(rpt.Transitions, wireTransition{Dep: tr.dep, From: tr.from, To: tr.to, At: tr.at.UnixNano()})
		}
		if out.Encode(rpt) != nil {
			os.Exit(0) // the parent is gone
		}
	}
}

// replicaProc runs the replica child and restarts it after each kill.
type replicaProc struct {
	t   *testing.T
	env childEnv

	mu      sync.Mutex
	cmd     *exec.Cmd
	last    map[int]childReport // by incarnation
	obs     *observer           // receives the child's transitions
	started int
	kills   int
}

func newReplicaProc(t *testing.T, env childEnv, obs *observer) *replicaProc {
	p := &replicaProc{t: t, env: env, last: map[int]childReport{}, obs: obs}
	t.Cleanup(p.kill)
	return p
}

func (p *replicaProc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	env := p.env
	env.Incarnation = p.started
	p.started++
	b, _ := json.Marshal(env)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), soakRoleEnv+"=replica", soakEnvVar+"="+string(b))
	cmd.Stderr = os.Stderr
	setPdeathsig(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd = cmd
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var rpt childReport
			if json.Unmarshal(sc.Bytes(), &rpt) == nil {
				for _, tr := range rpt.Transitions {
					p.obs.record(transition{replica: crashReplicaID, dep: tr.Dep, from: tr.From, to: tr.To, at: time.Unix(0, tr.At)})
				}
				rpt.Transitions = nil
				p.mu.Lock()
				p.last[rpt.Incarnation] = rpt
				p.mu.Unlock()
			}
		}
	}()
	return nil
}

// waitReport waits until the current incarnation has reported once (it has reconciled
// and its sessions run), or limit passes.
func (p *replicaProc) waitReport(ctx context.Context, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		p.mu.Lock()
		_, ok := p.last[p.started-1]
		p.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *replicaProc) kill() {
	p.mu.Lock()
	cmd := p.cmd
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	p.mu.Lock()
	p.kills++
	p.mu.Unlock()
}

// totals sums the last report of every incarnation.
func (p *replicaProc) totals() (sum childReport, incarnations int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.last {
		sum.Completed += r.Completed
		sum.Answered += r.Answered
		sum.Leaks += r.Leaks
		sum.Panics += r.Panics
		sum.ReconciledApplied += r.ReconciledApplied
		sum.ReconciledNot += r.ReconciledNot
		sum.ReconciledAwaiting += r.ReconciledAwaiting
		if sum.FirstLeak == "" {
			sum.FirstLeak = r.FirstLeak
		}
		if r.ReconcileError != "" {
			sum.ReconcileError = r.ReconcileError
		}
		if len(sum.Unanswered) < 10 {
			sum.Unanswered = append(sum.Unanswered, r.Unanswered...)
		}
	}
	return sum, len(p.last)
}
