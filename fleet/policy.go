package fleet

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// policyScript stores the policy version this replica runs and returns every fresh
// replica's, atomically. KEYS: 1 the fleet's hash of versions (one field per replica).
// ARGV: 1 replica, 2 version ("" publishes nothing), 3 how old a report may be in ms,
// 4 key expiry in ms. Returns replica, version, replica, version, ...
var policyScript = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], ARGV[1], now .. ':' .. ARGV[2]) end
local oldest, out = now - tonumber(ARGV[3]), {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local at, v = string.match(all[i + 1], '^(%d+):(.*)$')
  if not at or tonumber(at) < oldest then
    redis.call('HDEL', KEYS[1], all[i])
  else
    out[#out + 1] = all[i]
    out[#out + 1] = v
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return out
`)

// policyVersion is the policy version of the attached maps (dependencymap.Map's
// PolicyVersion; several different ones joined with ","), "" with none.
func (f *Fleet) policyVersion() string {
	f.mu.Lock()
	ms := slices.Clone(f.maps)
	f.mu.Unlock()
	var vs []string
	for _, m := range ms {
		if v := m.PolicyVersion(); !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	return strings.Join(vs, ",")
}

// queuePolicy adds the version report to the sync's pipeline, when a map is attached.
func (f *Fleet) queuePolicy(ctx context.Context, pipe redis.Pipeliner) *redis.Cmd {
	f.mu.Lock()
	attached := len(f.maps) > 0
	f.mu.Unlock()
	if !attached {
		return nil
	}
	f.stats.commands.Add(1)
	return policyScript.Eval(ctx, pipe, []string{f.KeyPrefix("_", "_policy") + "versions"}, f.cfg.Replica,
		f.policyVersion(), ceilMillis(f.cfg.LocalAfter), ceilMillis(f.cfg.KeyTTL))
}

// applyPolicy stores the versions the replicas reported.
func (f *Fleet) applyPolicy(cmd *redis.Cmd, at time.Time) {
	if cmd == nil {
		return
	}
	v, err := cmd.StringSlice()
	if err != nil {
		return
	}
	out := make(map[string]string, len(v)/2)
	for i := 0; i+1 < len(v); i += 2 {
		out[v[i]] = v[i+1]
	}
	f.versions.Store(&reported{versions: out, at: at})
}

type reported struct {
	versions map[string]string
	at       time.Time
}

// PolicyVersions returns the policy version every replica of the fleet runs, by
// replica name (Replica), as Redis held them at the last sync, this replica's with its
// version now; replicas silent for LocalAfter are left out. The fleet has converged
// when every value is the same. Nil when no map is attached (AttachMap): the version
// is the map's PolicyVersion. It does not block on the network.
func (f *Fleet) PolicyVersions() map[string]string {
	f.mu.Lock()
	attached := len(f.maps) > 0
	f.mu.Unlock()
	if !attached {
		return nil
	}
	out := map[string]string{}
	if r := f.versions.Load(); r != nil && time.Since(r.at) <= f.cfg.LocalAfter {
		out = maps.Clone(r.versions)
	}
	out[f.cfg.Replica] = f.policyVersion()
	return out
}
