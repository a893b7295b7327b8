package soak

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Fault kinds, as the summary counts them.
const (
	faultDepDown    = "dependency down"
	faultDepPartial = "dependency partial"
	faultDepSlow    = "dependency slow"
	faultDep429     = "dependency 429+Retry-After"
	faultModel      = "model primary down"
	faultModel429   = "model primary 429"
	faultRedis      = "redis killed+restarted"
	faultPostgres   = "postgres cut+back"
	faultClock      = "clock stepped fwd+back"
	faultClockBack  = "clock stepped back+fwd"
)

var faultKinds = []string{faultDepDown, faultDepPartial, faultDepSlow, faultDep429, faultModel, faultModel429,
	faultRedis, faultPostgres, faultClock, faultClockBack, faultReplicaKill}

// fault is one entry of the schedule: kind on target from start for dur.
type fault struct {
	kind   string
	target string // a dependency, or a replica for clock steps
	start  time.Duration
	dur    time.Duration
	step   time.Duration // clock faults: the size of the step
}

func (f fault) String() string {
	s := fmt.Sprintf("%6.1fs +%4.1fs %s", f.start.Seconds(), f.dur.Seconds(), f.kind)
	if f.target != "" {
		s += " " + f.target
	}
	if f.step != 0 {
		s += fmt.Sprintf(" by %v", f.step)
	}
	return s
}

// schedule draws the faults of a run of length total from seed: every kind at least
// once, then more at random, starting after a quiet warm-up and ending before a quiet
// tail in which everything recovers. Faults of different targets overlap.
func schedule(seed int64, total time.Duration, replicas int) []fault {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x50a4))
	warm, tail := 8*time.Second, 15*time.Second
	if total >= 10*time.Minute {
		warm, tail = 30*time.Second, 60*time.Second
	}
	end := total - tail
	kinds := append([]string(nil), faultKinds...)
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	var out []fault
	busy := map[string]time.Duration{} // target -> end of its last fault
	at := warm
	gap := (end - warm) / time.Duration(len(kinds)+2)
	for at < end {
		var kind string
		if len(kinds) > 0 {
			kind = kinds[0] // every kind once first; a busy target only delays it
		} else {
			kind = faultKinds[rng.IntN(len(faultKinds))]
		}
		f := fault{kind: kind, start: at, dur: time.Duration(3+rng.IntN(6)) * time.Second}
		switch kind {
		case faultDepDown, faultDepPartial, faultDepSlow, faultDep429:
			f.target = toolDeps[rng.IntN(len(toolDeps))]
		case faultModel, faultModel429:
			f.target = "model"
		case faultRedis:
			f.target = "redis"
		case faultPostgres:
			f.target = "postgres"
			f.dur = time.Duration(2+rng.IntN(3)) * time.Second
		case faultReplicaKill:
			f.target = fmt.Sprintf("r%d", crashReplicaID)
			f.dur = time.Duration(1+rng.IntN(3)) * time.Second
		case faultClock, faultClockBack:
			f.target = fmt.Sprintf("r%d", rng.IntN(replicas))
			f.step = time.Duration(20+rng.IntN(100)) * time.Second
			if kind == faultClockBack {
				f.step = -f.step
			}
		}
		if f.start+f.dur > end {
			f.dur = end - f.start
		}
		if f.dur <= 0 || busy[f.target] > f.start {
			at += time.Second
			continue
		}
		busy[f.target] = f.start + f.dur + 2*time.Second
		out = append(out, f)
		if len(kinds) > 0 {
			kinds = kinds[1:]
		}
		// Short runs pack the mandatory kinds; long ones space faults a few seconds apart.
		step := gap / 2
		if total >= 10*time.Minute {
			step = time.Duration(5+rng.IntN(20)) * time.Second
		}
		at += max(step, time.Second)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

func describeSchedule(fs []fault) string {
	var sb strings.Builder
	for _, f := range fs {
		sb.WriteString("  " + f.String() + "\n")
	}
	return sb.String()
}
