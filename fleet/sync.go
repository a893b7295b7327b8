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
	t := time.NewTicker(f.cfg.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-f.done:
			return
		case <-t.C:
		case <-f.wake:
		}
		f.sync()
	}
}

// sync runs one round: every breaker's script in one pipeline, one round trip.
func (f *Fleet) sync() {
	members := f.current()
	if len(members) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.OpTimeout)
	defer cancel()
	start := time.Now()
	if !f.loaded {
		f.stats.commands.Add(1)
		if err := syncScript.Load(ctx, f.rdb).Err(); err != nil {
			f.failed(err)
			return
		}
		f.loaded = true
	}
	reports := make([]fleetlink.Report, len(members))
	cmds := make([]*redis.Cmd, len(members))
	pipe := f.rdb.Pipeline()
	for i, m := range members {
		reports[i] = fleetlink.Read(m.b)
		cmds[i] = syncScript.EvalSha(ctx, pipe, m.keys, f.args(m, reports[i])...)
	}
	f.stats.commands.Add(int64(len(members)))
	throttles, tcmds := f.queueThrottles(ctx, pipe)
	_, err := pipe.Exec(ctx)
	if err != nil {
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			f.loaded = false // the server lost its scripts (restarted, flushed): load again
		}
		f.failed(err)
		return
	}
	f.stats.syncs.Add(1)
	if f.down {
		f.down = false
		f.cfg.Logger.Info("fleet: Redis reachable again; breakers are fleet-wide",
			"app", f.cfg.App, "replica", f.cfg.Replica, "outage", time.Since(f.downAt).Round(time.Millisecond))
	}
	for i, m := range members {
		f.apply(m, reports[i], cmds[i], start)
	}
	applyThrottles(throttles, tcmds, start)
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
				_ = f.Attach(b) // a name that fails CheckName stays local
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*member(nil), f.members...)
}

// failed notes a sync that did not reach Redis. The breakers keep following the fleet
// until LocalAfter has passed since their last sync, then decide alone.
func (f *Fleet) failed(err error) {
	f.stats.failures.Add(1)
	if !f.down {
		f.down, f.downAt = true, time.Now()
		f.stats.outages.Add(1)
		f.cfg.Logger.Warn("fleet: Redis unreachable; breakers decide locally until it answers",
			"app", f.cfg.App, "replica", f.cfg.Replica, "error", errorClass(err))
	}
}

// errorClass names an error from Redis or the network without its text.
func errorClass(err error) string {
	var ne interface{ Timeout() bool }
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case redis.HasErrorPrefix(err, "NOSCRIPT"):
		return "noscript"
	case errors.Is(err, redis.ErrClosed):
		return "client_closed"
	default:
		return "unreachable"
	}
}

func (f *Fleet) args(m *member, r fleetlink.Report) []any {
	p := m.b.Policy()
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
func (f *Fleet) apply(m *member, r fleetlink.Report, cmd *redis.Cmd, start time.Time) {
	res, err := cmd.Slice()
	if err != nil || len(res) < 11 {
		f.stats.failures.Add(1) // this breaker's hold runs out unless the next sync works
		return
	}
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
