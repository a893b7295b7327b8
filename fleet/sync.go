package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/internal/fleetlink"
)

// The sync loop: one goroutine per Fleet, one pipelined round trip per round.

func (f *Fleet) loop() {
	defer close(f.stopped)
	// The first tick comes at a random point of the first interval, then one every
	// interval: replicas started together (a deployment, or 64 fleets in one test
	// process) then spread their rounds over the interval instead of sending them to
	// Redis at the same instant every time.
	next := time.Now().Add(rand.N(f.cfg.SyncInterval) + 1)
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	for {
		select {
		case <-f.done:
			return
		case <-t.C:
			// One interval after the previous tick, not after the sync ends, so a slow
			// round does not shift the phase (unless it outlasted a whole interval).
			next = next.Add(f.cfg.SyncInterval)
			if time.Until(next) <= 0 {
				next = time.Now().Add(f.cfg.SyncInterval)
			}
			t.Reset(time.Until(next))
		case <-f.wake:
		case done := <-f.syncReq:
			f.sync()
			close(done)
			continue
		}
		f.sync()
	}
}

// sync runs one round: every breaker's script in one pipeline, one round trip (on
// Redis Cluster, go-redis splits the pipeline by node and sends the parts in
// parallel). Each breaker's script succeeds or fails on its own: on a cluster one node
// may be down while the others answer, and its breakers alone go local.
func (f *Fleet) sync() {
	members := f.current()
	if len(members) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.OpTimeout)
	defer cancel()
	start := time.Now()
	reports := make([]fleetlink.Report, len(members))
	args := make([][]any, len(members))
	cmds := make([]*redis.Cmd, len(members))
	pipe := f.rdb.Pipeline()
	for i, m := range members {
		if v := m.b.Policy().Version; v != m.version {
			// A new policy version (Map.Apply): its keys, with this breaker's state
			// published there as at a first sync.
			m.keys, m.version, m.gen, m.republish = f.keys(m.b), v, -1, true
		}
		reports[i] = fleetlink.Read(m.b)
		args[i] = f.args(m, reports[i])
		cmds[i] = syncScript.EvalSha(ctx, pipe, m.keys, args[i]...)
	}
	f.stats.commands.Add(int64(len(members)))
	// Every command carries its own error, read below; a connection that could not be
	// set up (refused credentials) fails the pipeline without one.
	throttles, tcmds := f.queueThrottles(ctx, pipe)
	pcmd := f.queuePolicy(ctx, pipe)
	_, execErr := pipe.Exec(ctx)
	// A node without the script (restarted, flushed, or a replica just promoted: Redis
	// does not replicate its script cache) answers NOSCRIPT. Run the script's text on
	// that node, which also caches it there for the next rounds.
	var again []int
	for i, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 && ctx.Err() == nil {
		pipe := f.rdb.Pipeline()
		for _, i := range again {
			cmds[i] = syncScript.Eval(ctx, pipe, members[i].keys, args[i]...)
		}
		f.stats.commands.Add(int64(len(again)))
		if _, err := pipe.Exec(ctx); err != nil {
			execErr = err
		}
	}
	errs := make([]error, len(members))
	results := make([][]any, len(members))
	failed := 0
	for i, c := range cmds {
		err := c.Err()
		res, ok := c.Val().([]any)
		if ok && len(res) >= 11 && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
			// Redis answered this command. On a cluster, go-redis retries the commands
			// of a node that failed (after a backoff), and when the deadline passes
			// during that backoff it marks every command of the pipeline with it,
			// answered ones too: one dead master would make every breaker local.
			err = nil
		}
		if err == nil && !ok && execErr != nil {
			err = execErr // never sent
		} else if err == nil && len(res) < 11 {
			err = errMalformed
		}
		if err != nil {
			errs[i] = err
			failed++
		}
		results[i] = res
	}
	f.settle(members, errs, failed)
	if failed > 0 {
		f.reloadTopology()
	}
	for i, m := range members {
		if errs[i] == nil {
			f.apply(m, reports[i], results[i], start)
		}
	}
	applyThrottles(throttles, tcmds, start)
	f.applyPolicy(pcmd, start)
}

// reloadTopology asks a Redis Cluster client to reload its slot map after a failed
// script. go-redis reloads it by itself on MOVED or ASK, and every
// ClusterStateReloadInterval (a minute by default); but a killed master answers
// nothing, so without this its slots would stay routed to it for up to that minute
// after a replica took over. The reload runs in go-redis's own goroutine, at most one
// at a time.
func (f *Fleet) reloadTopology() {
	if c, ok := f.rdb.(interface{ ReloadState(context.Context) }); ok {
		c.ReloadState(context.Background())
	}
}

// settle counts and logs a round. A round where every script failed is one failure;
// in a round where some succeeded, each failed script is one. An outage (counted
// once, logged once) begins when a sync fails after Redis has answered once; a Redis
// that never answered (a closed port, a wrong address or password from the start) is
// logged once too, but is not an outage of a service that was there.
func (f *Fleet) settle(members []*member, errs []error, failed int) {
	var first error
	for i, err := range errs {
		if err == nil {
			continue
		}
		if first == nil {
			first = err
		}
		class := errorClass(err)
		if failed < len(members) {
			f.count(err)
		}
		m := members[i]
		m.mu.Lock()
		m.status.Error = class
		m.mu.Unlock()
	}
	answeredBefore := f.answered
	if failed < len(members) {
		f.answered = true
		f.stats.syncs.Add(1)
	}
	if failed == 0 {
		if f.down {
			f.down = false
			if answeredBefore {
				f.cfg.Logger.Info("fleet: Redis reachable again; breakers are fleet-wide",
					"app", f.cfg.App, "replica", f.cfg.Replica, "outage", time.Since(f.downAt).Round(time.Millisecond))
			} else {
				f.cfg.Logger.Info("fleet: Redis answered; breakers are fleet-wide",
					"app", f.cfg.App, "replica", f.cfg.Replica, "after", time.Since(f.downAt).Round(time.Millisecond))
			}
		}
		return
	}
	class := errorClass(first)
	if failed == len(members) {
		f.count(first)
	}
	if f.down {
		return // logged and counted when it began
	}
	f.down, f.downAt = true, time.Now()
	breakers := fmt.Sprintf("%d of %d", failed, len(members))
	if !answeredBefore {
		f.cfg.Logger.Warn("fleet: Redis has not answered yet; breakers decide locally until it does",
			"app", f.cfg.App, "replica", f.cfg.Replica, "error", class, "breakers", breakers)
		return
	}
	f.stats.outages.Add(1)
	f.cfg.Logger.Warn("fleet: Redis unreachable; breakers decide locally until it answers",
		"app", f.cfg.App, "replica", f.cfg.Replica, "error", class, "breakers", breakers)
}

// current returns the attached breakers, first attaching those the maps created since.
func (f *Fleet) current() []*member {
	f.mu.Lock()
	maps := f.maps
	f.mu.Unlock()
	for _, dm := range maps {
		for _, b := range dm.Breakers() {
			f.mu.Lock()
			_, ok := f.byName[b.Name()]
			f.mu.Unlock()
			if !ok {
				_ = f.attach(b) // a name that fails CheckName stays local
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*member(nil), f.members...)
}

func (f *Fleet) args(m *member, r fleetlink.Report) []any {
	p := m.b.ProbePolicy() // the policy, or, with a health probe attached, its cadence
	slowRate := 0.0
	if p.SlowCallThreshold > 0 {
		slowRate = p.SlowCallRateThreshold
	}
	jitter := max(p.Jitter, 0)
	minCalls := p.MinimumCalls
	if p.WindowCalls > 0 {
		minCalls = min(minCalls, p.WindowCalls)
	}
	kind := kindOf(r)
	if kind == kindNone && m.republish {
		switch breaker.State(r.State) {
		case breaker.Open, breaker.HalfOpen:
			kind = kindTripFailures
		case breaker.ForcedOpen:
			kind = kindForceOpen
		case breaker.ForcedClosed:
			kind = kindForceClosed
		}
	}
	want := "0"
	if r.Want {
		want = "1"
	}
	return []any{
		f.cfg.Replica, m.gen, kind,
		r.Calls, r.Failures, r.Slow,
		ceilMillis(r.NotBefore), want,
		minCalls, p.FailureRateThreshold, slowRate,
		p.Cooldown.Milliseconds(), p.CooldownMultiplier, p.MaxCooldown.Milliseconds(), jitter, rand.Float64(),
		max(p.ProbeLease.Milliseconds(), 1), (3 * f.cfg.SyncInterval).Milliseconds(),
		f.cfg.KeyTTL.Milliseconds(), f.cfg.HistoryLen,
	}
}

func ceilMillis(d time.Duration) int64 { return int64((d + time.Millisecond - 1) / time.Millisecond) }

// kindOf says what the breaker did by itself since it last applied the fleet's state.
func kindOf(r fleetlink.Report) int {
	if !r.Dirty {
		return kindNone
	}
	st, c := breaker.State(r.State), breaker.Cause(r.Cause)
	switch {
	case c == breaker.CauseOperator && st == breaker.ForcedOpen:
		return kindForceOpen
	case c == breaker.CauseOperator && st == breaker.ForcedClosed:
		return kindForceClosed
	case c == breaker.CauseOperator && st == breaker.Closed:
		return kindReset
	case st == breaker.Open && c == breaker.CauseFailureRate:
		return kindTripFailures
	case st == breaker.Open && c == breaker.CauseSlowCallRate:
		return kindTripSlow
	case st == breaker.Open && c == breaker.CauseProbeFailed:
		return kindProbeFailed
	case st == breaker.Closed && c == breaker.CauseProbeSucceeded:
		return kindProbeSucceeded
	}
	return kindNone // a local half-open while Redis was away: the fleet's state wins
}

// apply reads one breaker's script result and applies the fleet's state to it.
func (f *Fleet) apply(m *member, r fleetlink.Report, res []any, start time.Time) {
	st, _ := res[0].(string)
	gen, reopenIn, fp, mine, lease, moved := toInt(res[1]), toInt(res[2]), toInt(res[3]), toInt(res[4]), toInt(res[5]), toInt(res[6])
	cause, _ := res[7].(string)
	if k := kindOf(r); k != kindNone {
		if moved == 1 {
			f.stats.published.Add(1)
		} else {
			f.stats.lost.Add(1)
		}
	}
	fleetState := parseState(st)
	m.republish = false
	if m.gen > 0 && gen < m.gen {
		// Generations only grow: Redis lost this breaker's state. Keep the local state
		// and publish it at once rather than follow a fleet that forgot.
		m.gen, m.republish = gen, true
		f.poke()
		return
	}
	a := fleetlink.Adopt{
		IfLocalGen:   r.LocalGen,
		State:        uint8(fleetState),
		Cause:        uint8(parseCause(cause)),
		Reason:       fmt.Sprintf("fleet generation %d: %s", gen, cause),
		FailedProbes: int(fp),
		Hold:         f.cfg.LocalAfter,
		Defer:        f.cfg.SyncInterval,
	}
	// The round trip took part of the wait already: count from when it began.
	elapsed := time.Since(start)
	switch fleetState {
	case breaker.Open:
		a.ReopenIn = max(time.Duration(reopenIn)*time.Millisecond-elapsed, 0)
	case breaker.HalfOpen:
		if mine == 1 {
			a.Probes = m.b.Policy().HalfOpenProbes
		} else {
			// Another replica holds the probe: wait for it, as an open breaker.
			a.State = uint8(breaker.Open)
			if lease > 0 {
				a.ReopenIn = max(time.Duration(lease)*time.Millisecond-elapsed, 0)
			}
		}
	}
	to := breaker.State(a.State)
	// A new period of the same state starts afresh (a closed window empties, a re-leased
	// probe gets its budget), unless this replica's own report made it.
	a.NewPeriod = moved == 0 && m.gen >= 0 && gen != m.gen && (to == breaker.Closed || to == breaker.HalfOpen)
	if mine == 1 && int64(gen) != m.gen {
		f.stats.leases.Add(1)
	}
	applied := fleetlink.Apply(m.b, a)
	if applied {
		m.gen = gen
	}
	m.mu.Lock()
	m.status.FleetWide = true
	m.status.State = fleetState
	m.status.Generation = uint64(gen)
	m.status.ProbeHolder = mine == 1
	m.status.Error = ""
	m.status.LastSync = time.Now()
	m.status.Calls, m.status.Failures, m.status.SlowCalls = toInt(res[8]), toInt(res[9]), toInt(res[10])
	m.mu.Unlock()
	if !applied {
		f.poke() // the breaker changed meanwhile: publish it at once
	}
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func parseState(s string) breaker.State {
	for _, st := range []breaker.State{breaker.Closed, breaker.ForcedClosed, breaker.Open, breaker.HalfOpen, breaker.ForcedOpen} {
		if st.String() == s {
			return st
		}
	}
	return breaker.Closed
}

func parseCause(s string) breaker.Cause {
	if s == "probe_lease_expired" {
		return breaker.CauseCooldownElapsed
	}
	for c := breaker.CauseFailureRate; c <= breaker.CauseOperator; c++ {
		if c.String() == s {
			return c
		}
	}
	return breaker.CauseOperator
}
