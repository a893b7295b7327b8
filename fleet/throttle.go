package fleet

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbreaker/agentbreaker/redact"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// throttleScript stores this replica's throttle window and sums the other replicas'
// fresh ones, atomically. KEYS: 1 the throttle's hash (one field per replica). ARGV: 1
// replica, 2 requests, 3 accepts, 4 how old a report may be in ms, 5 key expiry in ms.
// Returns the other replicas' requests and accepts.
var throttleScript = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. ARGV[3] .. ':' .. now)
local oldest = now - tonumber(ARGV[4])
local req, acc = 0, 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local r, a, at = string.match(all[i + 1], '^(%d+):(%d+):(%d+)$')
  if not at or tonumber(at) < oldest then
    redis.call('HDEL', KEYS[1], all[i])
  elseif all[i] ~= ARGV[1] then
    req, acc = req + tonumber(r), acc + tonumber(a)
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {req, acc}
`)

// throttleMember is one attached throttle: its key and what the other replicas
// reported at the last sync.
type throttleMember struct {
	th     *throttle.Throttle
	key    string
	others atomic.Pointer[othersCounts]
}

type othersCounts struct {
	c  throttle.Counts
	at time.Time
}

// AttachThrottle makes th shed by the fleet's window: at every sync this replica
// publishes its window's requests and accepts and reads the other replicas', and th
// computes its share over the sum, so every replica sheds alike. When Redis cannot be
// reached for LocalAfter, th goes back to its own window. AttachMap attaches the map's
// throttles.
func (f *Fleet) AttachThrottle(th *throttle.Throttle) error {
	if err := redact.CheckName("throttle name", th.Name()); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	for _, m := range f.throttles {
		if m.th == th {
			return nil
		}
		if m.th.Name() == th.Name() {
			return fmt.Errorf("fleet: a throttle named %q is already attached", th.Name())
		}
	}
	m := &throttleMember{th: th, key: f.KeyPrefix("_", th.Name()) + "throttle"}
	localAfter := f.cfg.LocalAfter
	th.ShareWith(func() throttle.Counts {
		o := m.others.Load()
		if o == nil || time.Since(o.at) > localAfter {
			return throttle.Counts{}
		}
		return o.c
	})
	f.throttles = append(f.throttles, m)
	f.poke()
	return nil
}

// queueThrottles adds every throttle's script to the sync's pipeline.
func (f *Fleet) queueThrottles(ctx context.Context, pipe redis.Pipeliner) ([]*throttleMember, []*redis.Cmd) {
	f.mu.Lock()
	ms := append([]*throttleMember(nil), f.throttles...)
	f.mu.Unlock()
	cmds := make([]*redis.Cmd, len(ms))
	for i, m := range ms {
		c := m.th.Counts() // this replica's own window
		cmds[i] = throttleScript.Eval(ctx, pipe, []string{m.key}, f.cfg.Replica, c.Requests, c.Accepts,
			ceilMillis(f.cfg.LocalAfter), ceilMillis(f.cfg.KeyTTL))
	}
	f.stats.commands.Add(int64(len(ms)))
	return ms, cmds
}

// applyThrottles stores what the other replicas reported.
func applyThrottles(ms []*throttleMember, cmds []*redis.Cmd, at time.Time) {
	for i, m := range ms {
		v, err := cmds[i].Slice()
		if err != nil || len(v) != 2 {
			continue
		}
		m.others.Store(&othersCounts{c: throttle.Counts{Requests: uint64(toInt(v[0])), Accepts: uint64(toInt(v[1]))}, at: at})
		// Recompute the share now: a replica whose own calls all succeed would
		// otherwise not look at the fleet's window until one of them failed.
		m.th.Probability()
	}
}
