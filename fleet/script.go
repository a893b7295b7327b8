package fleet

import "github.com/redis/go-redis/v9"

// syncScript is the whole of one breaker's sync, atomic in Redis: publish what this
// replica did (a trip, a probe's outcome, an operator's action), compare-and-set on the
// fleet's generation; record a server-stated delay; store this replica's window and sum
// the fleet's; trip when the fleet's totals cross the breaker's gates; hand the probe
// lease to this replica if it asks and the lease is free; renew every expiry. It
// returns the fleet's state, so a replica only ever applies what it read from Redis.
//
// KEYS: 1 state hash, 2 window hash (one field per replica), 3 probe lease, 4 history.
// ARGV: 1 replica, 2 generation the replica last applied, 3 what it did (see kind),
// 4-6 its window (calls, failures, slow calls), 7 server-stated delay in ms (0: none),
// 8 wants the probe lease (1/0), 9 MinimumCalls, 10 FailureRateThreshold,
// 11 SlowCallRateThreshold (0: slow calls not tracked), 12 Cooldown ms,
// 13 CooldownMultiplier, 14 MaxCooldown ms, 15 Jitter, 16 a uniform random in [0,1),
// 17 ProbeLease ms, 18 how old a window report may be, in ms, 19 key expiry in ms,
// 20 history length.
//
// Returns: state, generation, ms until reopen (open), failed probes, 1 if this replica
// holds the lease, lease ms left (-2: none), 1 if this call's report moved the state,
// cause of the last transition, fleet calls, failures, slow calls.
var syncScript = redis.NewScript(`
-- Reading TIME before writing needs effects replication: the default since Redis 5,
-- the only mode since 7 (where this call is a no-op).
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me, mygen, kind = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local s = redis.call('HMGET', KEYS[1], 'state', 'gen', 'reopen', 'fp', 'holder', 'nb', 'cause',
  'wgen', 'wc', 'wf', 'ws', 'scan')
local state = s[1] or 'closed'
local gen = tonumber(s[2] or '0')
local reopen = tonumber(s[3] or '0')
local fp = tonumber(s[4] or '0')
local holder = s[5] or ''
local nb = tonumber(s[6] or '0')
local cause = s[7] or ''
-- The fleet's window sums, of the generation wgen, and when the reports were last
-- rescanned.
local wgen = tonumber(s[8] or '-1')
local calls, fails, slow = tonumber(s[9] or '0'), tonumber(s[10] or '0'), tonumber(s[11] or '0')
local scan = tonumber(s[12] or '0')
local moved = 0
local winfresh = false -- the window hash was deleted: its new one needs an expiry

local function move(to, why)
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[20], '*',
    'gen', gen + 1, 'from', state, 'to', to, 'cause', why, 'by', me, 'at', now)
  redis.call('PEXPIRE', KEYS[4], ARGV[19]) -- transitions are rare: renew at each
  state, gen, cause = to, gen + 1, why
end
local function free()
  holder = ''
  redis.call('DEL', KEYS[3])
end
local function open(why)
  local c = tonumber(ARGV[12]) * math.pow(tonumber(ARGV[13]), fp)
  c = c * (1 + tonumber(ARGV[15]) * tonumber(ARGV[16]))
  c = math.min(c, tonumber(ARGV[14]))
  reopen = now + math.floor(c)
  if nb > reopen then reopen = nb end
  free()
  move('open', why)
end

-- 1. What this replica did, against the generation it last saw.
-- (A replica that has not synced yet, mygen -1, tripped in the closed period it would
-- have joined.)
if (kind == 1 or kind == 2) and state == 'closed' and (gen == mygen or mygen < 0) then
  open(kind == 1 and 'failure_rate' or 'slow_call_rate'); moved = 1
elseif kind == 3 and state == 'half_open' and gen == mygen and holder == me then
  fp, nb = 0, 0
  free(); redis.call('DEL', KEYS[2]); winfresh = true
  move('closed', 'probe_succeeded'); moved = 1
elseif kind == 4 and state == 'half_open' and gen == mygen and holder == me then
  fp = fp + 1
  open('probe_failed'); moved = 1
elseif kind == 5 and state ~= 'forced_open' then
  free(); move('forced_open', 'operator'); moved = 1
elseif kind == 6 and state ~= 'forced_closed' then
  fp = 0
  free(); move('forced_closed', 'operator'); moved = 1
elseif kind == 7 then
  fp, nb = 0, 0
  free(); redis.call('DEL', KEYS[2]); winfresh = true
  move('closed', 'operator'); moved = 1
end

-- 2. A delay the dependency stated: a floor on this and the next open period.
local nbin = tonumber(ARGV[7])
if nbin > 0 then
  if now + nbin > nb then nb = now + nbin end
  if state == 'open' and nb > reopen then reopen = nb end
end

-- 3. This replica's window, then the fleet's. Only reports of the current period
-- count. The sums are kept with the state and moved by this replica's change (its
-- previous report out, its new one in), so a sync costs the same however many
-- replicas there are. Once every ARGV[18] ms one sync rescans every report instead:
-- it deletes those too old (a replica gone) and recomputes the sums from scratch.
if wgen ~= gen then
  calls, fails, slow, wgen = 0, 0, 0, gen -- a new period starts with an empty window
end
local prev = redis.call('HGET', KEYS[2], me)
redis.call('HSET', KEYS[2], me, ARGV[2] .. ':' .. ARGV[4] .. ':' .. ARGV[5] .. ':' .. ARGV[6] .. ':' .. now)
if now - scan >= tonumber(ARGV[18]) then
  calls, fails, slow, scan = 0, 0, 0, now
  local oldest = now - tonumber(ARGV[18])
  local all = redis.call('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    local g, c, f, sl, at = string.match(all[i + 1], '^(-?%d+):(%d+):(%d+):(%d+):(%d+)$')
    if not at or tonumber(at) < oldest then
      redis.call('HDEL', KEYS[2], all[i])
    elseif tonumber(g) == gen then
      calls, fails, slow = calls + tonumber(c), fails + tonumber(f), slow + tonumber(sl)
    end
  end
else
  if prev then
    local g, c, f, sl = string.match(prev, '^(-?%d+):(%d+):(%d+):(%d+):')
    if g and tonumber(g) == gen then
      calls, fails, slow = calls - tonumber(c), fails - tonumber(f), slow - tonumber(sl)
    end
  end
  if mygen == gen then
    calls, fails, slow = calls + tonumber(ARGV[4]), fails + tonumber(ARGV[5]), slow + tonumber(ARGV[6])
  end
  calls, fails, slow = math.max(calls, 0), math.max(fails, 0), math.max(slow, 0)
end
if state == 'closed' and calls > 0 and calls >= tonumber(ARGV[9]) then
  if fails / calls >= tonumber(ARGV[10]) then
    open('failure_rate')
  elseif tonumber(ARGV[11]) > 0 and slow / calls >= tonumber(ARGV[11]) then
    open('slow_call_rate')
  end
end

-- 4. The probe lease: one probe per cooldown for the whole fleet.
local lease = redis.call('PTTL', KEYS[3])
if ARGV[8] == '1' and ((state == 'open' and now >= reopen) or (state == 'half_open' and lease < 0)) then
  redis.call('SET', KEYS[3], me, 'PX', ARGV[17])
  lease = tonumber(ARGV[17])
  holder = me
  move('half_open', state == 'open' and 'cooldown_elapsed' or 'probe_lease_expired')
end

-- A transition after the window was counted (a trip, a lease) starts a new period.
local sc, sf, ss = calls, fails, slow
if wgen ~= gen then sc, sf, ss = 0, 0, 0 end
-- The state is written only when it changed (a quiet breaker's sync writes its own
-- report alone), and the expiries are renewed by the sync that rescans, once every
-- ARGV[18] ms: less for Redis to do and to replicate on every sync.
local fields = {'state', 'gen', 'reopen', 'fp', 'holder', 'nb', 'cause', 'wgen', 'wc', 'wf', 'ws', 'scan'}
local values = {state, gen, reopen, fp, holder, nb, cause, gen, sc, sf, ss, scan}
local set = {}
for i = 1, #fields do
  local v = values[i]
  if type(v) == 'number' then v = string.format('%.17g', v) end
  if s[i] ~= v then
    set[#set + 1] = fields[i]
    set[#set + 1] = v
  end
end
if #set > 0 then redis.call('HSET', KEYS[1], unpack(set)) end
if scan == now then
  redis.call('PEXPIRE', KEYS[1], ARGV[19])
  redis.call('PEXPIRE', KEYS[2], ARGV[19])
  if redis.call('EXISTS', KEYS[4]) == 1 then redis.call('PEXPIRE', KEYS[4], ARGV[19]) end
elseif winfresh then
  redis.call('PEXPIRE', KEYS[2], ARGV[19])
end
local mine = 0
if holder == me and lease > 0 then mine = 1 end
return {state, gen, reopen - now, fp, mine, lease, moved, cause, calls, fails, slow}
`)

// What a replica did since it last applied the fleet's state (ARGV 3).
const (
	kindNone = iota
	kindTripFailures
	kindTripSlow
	kindProbeSucceeded
	kindProbeFailed
	kindForceOpen
	kindForceClosed
	kindReset
)
