package docs

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agentbreaker/agentbreaker/internal/sim"
)

// figure is how one inline figure is computed: the command that prints it and what to
// take from the output.
type figure struct {
	cmd   string
	value func(out []byte) (string, error)
}

// figures names every inline figure a page may hold (<!-- fig: NAME -->). Add a row
// here for a new one; a name a page uses that is not here fails the test.
var figures = map[string]figure{}

// simulateJSON is the command the simulator's figures come from, with extra flags.
func simulateJSON(flags string) string {
	cmd := "agentbreaker simulate -json -"
	if flags != "" {
		cmd += " " + flags
	}
	return cmd
}

// summaryOf reads simulate's JSON summary.
type summaryOf struct {
	Strategies []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Policy      *sim.PolicyInfo `json:"policy"`
		Summary     sim.Summary     `json:"summary"`
	} `json:"strategies"`
}

// simFigure is a figure of one strategy's run of `simulate` with flags.
func simFigure(flags, strategy string, get func(d string, s sim.Summary) string) figure {
	return figure{cmd: simulateJSON(flags), value: func(out []byte) (string, error) {
		var sum summaryOf
		if err := json.Unmarshal(out, &sum); err != nil {
			return "", fmt.Errorf("simulate's JSON: %w", err)
		}
		for _, s := range sum.Strategies {
			if s.Name == strategy {
				return get(s.Description, s.Summary), nil
			}
		}
		return "", fmt.Errorf("no strategy %s in simulate's JSON", strategy)
	}}
}

// simRatio is a ratio of two strategies' calls during the outage, rounded.
func simRatio(flags, num, den string) figure {
	return figure{cmd: simulateJSON(flags), value: func(out []byte) (string, error) {
		var sum summaryOf
		if err := json.Unmarshal(out, &sum); err != nil {
			return "", err
		}
		calls := map[string]int{}
		for _, s := range sum.Strategies {
			calls[s.Name] = s.Summary.CallsDuringOutage
		}
		if calls[den] == 0 {
			return "", fmt.Errorf("%s sent no call during the outage", den)
		}
		return strconv.Itoa(int(math.Round(float64(calls[num]) / float64(calls[den])))), nil
	}}
}

// thousands writes n with a comma every three digits, as the pages do: 5,833.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// seconds writes a time in seconds as the pages do ("8.7 s"); "–" when it did not
// happen, "still open" for a close after the end of the run.
func seconds(v *float64) string {
	if v == nil {
		return "–"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64) + " s"
}

func turns(t sim.TurnCounts) string { return fmt.Sprintf("%d / %d / %d", t.OK, t.Degraded, t.Failed) }

// policyOf is the policy part of an agentbreaker strategy's description.
func policyOf(desc string) string {
	desc = strings.TrimPrefix(desc, "agentbreaker callbacks: ")
	p, _, _ := strings.Cut(desc, "; bulkhead")
	return p
}

func init() {
	short := map[string]string{
		sim.StrategyNaive: "naive", sim.StrategyConsecutive: "consecutive",
		sim.StrategyDefaults: "defaults", sim.StrategyPolicy: "policy",
	}
	// The default incident's table, one row per strategy: sim.<strategy>.<column>.
	for _, st := range sim.Strategies() {
		p := "sim." + short[st] + "."
		figures[p+"calls_in_outage"] = simFigure("", st, func(_ string, s sim.Summary) string { return thousands(s.CallsDuringOutage) })
		figures[p+"trip_after_onset"] = simFigure("", st, func(_ string, s sim.Summary) string { return seconds(s.TripAfterOnset) })
		figures[p+"probes"] = simFigure("", st, func(_ string, s sim.Summary) string {
			if s.Trips == 0 {
				return "–"
			}
			return strconv.Itoa(s.ProbesDuringOutage)
		})
		figures[p+"closed_after_recovery"] = simFigure("", st, func(_ string, s sim.Summary) string { return seconds(s.CloseAfterRecovery) })
		figures[p+"outage_turns"] = simFigure("", st, func(_ string, s sim.Summary) string { return turns(s.OutageTurns) })
		figures[p+"outage_turns_failed"] = simFigure("", st, func(_ string, s sim.Summary) string { return strconv.Itoa(s.OutageTurns.Failed) })
		figures[p+"outage_turns_total"] = simFigure("", st, func(_ string, s sim.Summary) string {
			return strconv.Itoa(s.OutageTurns.OK + s.OutageTurns.Degraded + s.OutageTurns.Failed)
		})
		figures[p+"hung_worker_seconds"] = simFigure("", st, func(_ string, s sim.Summary) string {
			return thousands(int(math.Round(s.WorkerSecondsHung)))
		})
		figures[p+"description"] = simFigure("", st, func(d string, _ sim.Summary) string { return d })
		figures[p+"policy"] = simFigure("", st, func(d string, _ sim.Summary) string { return policyOf(d) })
	}
	figures["sim.naive_over_policy"] = simRatio("", sim.StrategyNaive, sim.StrategyPolicy)
	// The what-ifs the pages try.
	figures["sim.partial.policy.calls_in_outage"] = simFigure("-outage-error-rate 0.6", sim.StrategyPolicy,
		func(_ string, s sim.Summary) string { return thousands(s.CallsDuringOutage) })
	figures["sim.partial.naive.outage_turn_p50"] = simFigure("-outage-error-rate 0.6", sim.StrategyNaive,
		func(_ string, s sim.Summary) string { return strconv.FormatFloat(s.OutageTurnP50, 'f', 0, 64) + " s" })
	figures["sim.partial.naive.outage_turns_ok"] = simFigure("-outage-error-rate 0.6", sim.StrategyNaive,
		func(_ string, s sim.Summary) string { return strconv.Itoa(s.OutageTurns.OK) })
	figures["sim.probes3.policy.calls_in_outage"] = simFigure("-half-open-probes 3", sim.StrategyPolicy,
		func(_ string, s sim.Summary) string { return thousands(s.CallsDuringOutage) })
	figures["sim.probes3.policy.closed_after_recovery"] = simFigure("-half-open-probes 3", sim.StrategyPolicy,
		func(_ string, s sim.Summary) string { return seconds(s.CloseAfterRecovery) })
	// docs/probes.md: the incident with and without a health probe, and a long outage
	// under the growing cooldown.
	probeRuns := map[string]string{
		"probe":     "-strategies agentbreaker-policy,agentbreaker-probe",
		"probelong": "-duration 40m -outage-end 32m -cooldown-multiplier 2 -strategies agentbreaker-policy,agentbreaker-probe",
	}
	for run, flags := range probeRuns {
		for short, st := range map[string]string{"policy": sim.StrategyPolicy, "probe": sim.StrategyProbe} {
			p := run + "." + short + "."
			figures[p+"calls_in_outage"] = simFigure(flags, st, func(_ string, s sim.Summary) string { return thousands(s.CallsDuringOutage) })
			figures[p+"probes"] = simFigure(flags, st, func(_ string, s sim.Summary) string { return strconv.Itoa(s.ProbesDuringOutage) })
			figures[p+"closed_after_recovery"] = simFigure(flags, st, func(_ string, s sim.Summary) string { return seconds(s.CloseAfterRecovery) })
			figures[p+"hung_worker_seconds"] = simFigure(flags, st, func(_ string, s sim.Summary) string {
				return thousands(int(math.Round(s.WorkerSecondsHung)))
			})
		}
	}
}

// benchFig is a figure that internal/benchtable prints from a recorded benchmark run
// (docs/bench/*.txt): the command's whole output, one value.
func benchFig(args string) figure {
	return figure{cmd: "go run ./internal/benchtable " + args, value: func(out []byte) (string, error) {
		v := strings.TrimSpace(string(out))
		if v == "" || strings.Contains(v, "\n") {
			return "", fmt.Errorf("benchtable printed %q, want one value", out)
		}
		return v, nil
	}}
}

// The benchmark figures of README.md, docs/benchmarks.md and docs/fleet.md, from the
// runs recorded under docs/bench (the pages give the commands that record them).
func init() {
	const run, fleet, cb = "docs/bench/2026-12-02.txt", "docs/bench/2026-12-02-fleet.txt", "docs/bench/2026-12-02-callbacks.txt"
	for name, args := range map[string]string{
		"bench.open.gobreaker_over_agentbreaker":    "ratio " + run + " Open/gobreaker-twostep Open/agentbreaker",
		"bench.open.agentbreaker":                   "median " + run + " Open/agentbreaker",
		"bench.open.gobreaker":                      "median " + run + " Open/gobreaker-twostep",
		"bench.halfopen.agentbreaker":               "median " + run + " HalfOpen/agentbreaker",
		"bench.halfopen.systemclock":                "median " + run + " HalfOpen/agentbreaker-systemclock",
		"bench.halfopen.fakeclock":                  "median " + run + " HalfOpen/agentbreaker-fakeclock",
		"bench.throttle.breaker":                    "median " + run + " Throttle/agentbreaker-breaker",
		"bench.throttle.with":                       "median " + run + " Throttle/agentbreaker-breaker+throttle",
		"bench.throttle.failsafe":                   "median " + run + " Throttle/failsafe-adaptivethrottler",
		"bench.halfopen.failsafe":                   "median " + run + " HalfOpen/failsafe-permit",
		"bench.throttle.over_breaker":               "ratio " + run + " Throttle/agentbreaker-breaker+throttle Throttle/agentbreaker-breaker",
		"bench.closed.gobreaker_over_agentbreaker":  "ratio " + run + " Closed/gobreaker-twostep Closed/agentbreaker",
		"bench.closed.over_atomic_add":              "ratio " + run + " Closed/agentbreaker Baseline/atomic-add",
		"bench.closedparallel.over_atomic_add":      "ratio " + run + " ClosedParallel/agentbreaker BaselineParallel/atomic-add",
		"bench.callbacks.overhead":                  "median -unit overhead-% " + cb + " ToolCallOverheadPaired",
		"bench.callbacks.bytes_increase":            "increase -unit B/op " + cb + " ToolCallOverhead/calls=1/agentbreaker=true ToolCallOverhead/calls=1/agentbreaker=false",
		"bench.callbacks.sessions_throughput_ratio": "median -unit throughput-ratio " + cb + " ConcurrentSessionsPaired",
		"bench.callbacks.sessions_turns_per_s":      "median -unit turns/s-with " + cb + " ConcurrentSessionsPaired",
		"bench.fleet.closed.local":                  "median " + fleet + " FleetClosed/agentbreaker-local",
		"bench.fleet.closed.fleet":                  "median " + fleet + " FleetClosed/agentbreaker-fleet",
		"bench.fleet.closed.fleet_over_local":       "ratio " + fleet + " FleetClosed/agentbreaker-fleet FleetClosed/agentbreaker-local",
		"bench.fleet.closed.gobreaker_over_fleet":   "ratio " + fleet + " FleetClosed/gobreaker-distributed FleetClosed/agentbreaker-fleet",
		"bench.fleet.closed.gobreaker_roundtrips":   "median -unit redis-roundtrips/op " + fleet + " FleetClosed/gobreaker-distributed",
		"bench.fleet.closed.gobreaker_allocs":       "median -unit allocs/op " + fleet + " FleetClosed/gobreaker-distributed",
	} {
		figures[name] = benchFig(args)
	}
}

// The adaptive limit's cost (docs/adaptive-concurrency.md): one file per GOMAXPROCS.
func init() {
	const one, two = "docs/bench/2026-12-03-adaptive.txt", "docs/bench/2026-12-03-adaptive-cpu2.txt"
	figures["bench.adaptive.ratio"] = benchFig("ratio " + one + " AdaptiveLimit/agentbreaker-breaker+limit AdaptiveLimit/agentbreaker-breaker")
	figures["bench.adaptive.floor_ratio"] = benchFig("ratio " + one + " AdaptiveLimit/floor-breaker+two-atomic-adds AdaptiveLimit/agentbreaker-breaker")
	figures["bench.adaptive.parallel_one"] = benchFig("median " + one + " AdaptiveLimitParallel/agentbreaker-breaker+limit")
	figures["bench.adaptive.parallel_two"] = benchFig("median " + two + " AdaptiveLimitParallel/agentbreaker-breaker+limit")
	figures["bench.adaptive.plugin_work_ratio"] = benchFig("median -unit work-ratio " + one + " CallbacksPerCallAdaptivePaired")
	figures["bench.adaptive.plugin_breaker"] = benchFig("median -unit ns/call-breaker " + one + " CallbacksPerCallAdaptivePaired")
	figures["bench.adaptive.plugin_limit"] = benchFig("median -unit ns/call-breaker+limit " + one + " CallbacksPerCallAdaptivePaired")
	figures["bench.adaptive.plugin_context"] = benchFig("median -unit ns/call-context " + one + " CallbacksPerCallAdaptivePaired")
	figures["bench.adaptive.failsafe_over_limit"] = benchFig("ratio " + one + " AdaptiveLimit/failsafe-adaptivelimiter AdaptiveLimit/agentbreaker-breaker+limit")
	figures["bench.adaptive.goal"] = figure{
		cmd:   "go run ./internal/benchtable table -units ns/op,allocs/op,work-ratio -match 'AdaptiveLimit/|AdaptiveLimitParallel/|Paired' " + one,
		value: adaptiveCostGoal,
	}
}

// The adaptive limit's cost goal (issue 43), as docs/adaptive-concurrency.md states it:
// read where a user pays it, the plugin's work per call with the limit on at most
// 1.1× with it off; the primitives at most 4× the breaker alone and at most a fifth of
// failsafe-go's adaptivelimiter, with no allocation.
const (
	adaptiveGoalWorkRatio    = 1.1
	adaptiveGoalOverBreaker  = 4.0
	adaptiveGoalUnderPeerDiv = 5.0
)

// adaptiveCostGoal reads benchtable's table of the adaptive recording and says "met"
// when every part of the goal holds, or "not met" and the parts that do not.
func adaptiveCostGoal(out []byte) (string, error) {
	rows := map[string][]string{} // benchmark → ns/op, allocs/op, work-ratio
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && f[0] != "benchmark" {
			rows[f[0]] = f[2:]
		}
	}
	num := func(name string, col int) (float64, error) {
		r, ok := rows[name]
		if !ok {
			return 0, fmt.Errorf("no row %s in benchtable's table", name)
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(r[col], ",", ""), 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return v, nil
	}
	var vals [6]float64
	for i, q := range []struct {
		name string
		col  int
	}{
		{"CallbacksPerCallAdaptivePaired", 2},
		{"AdaptiveLimit/agentbreaker-breaker", 0},
		{"AdaptiveLimit/agentbreaker-breaker+limit", 0},
		{"AdaptiveLimit/failsafe-adaptivelimiter", 0},
		{"AdaptiveLimit/agentbreaker-breaker+limit", 1},
		{"AdaptiveLimitParallel/agentbreaker-breaker+limit", 1},
	} {
		v, err := num(q.name, q.col)
		if err != nil {
			return "", err
		}
		vals[i] = v
	}
	work, breaker, limit, peer, allocs, allocsParallel := vals[0], vals[1], vals[2], vals[3], vals[4], vals[5]
	var missed []string
	if work > adaptiveGoalWorkRatio {
		missed = append(missed, fmt.Sprintf("plugin work %.2f× > %.1f×", work, adaptiveGoalWorkRatio))
	}
	if limit > adaptiveGoalOverBreaker*breaker {
		missed = append(missed, fmt.Sprintf("primitives %.2f× the breaker > %.0f×", limit/breaker, adaptiveGoalOverBreaker))
	}
	if limit*adaptiveGoalUnderPeerDiv > peer {
		missed = append(missed, fmt.Sprintf("primitives 1/%.1f of failsafe-go's > 1/%.0f", peer/limit, adaptiveGoalUnderPeerDiv))
	}
	if allocs != 0 || allocsParallel != 0 {
		missed = append(missed, "allocations")
	}
	if len(missed) > 0 {
		return "not met (" + strings.Join(missed, "; ") + ")", nil
	}
	return "met", nil
}

func init() {
	figures["bench.staleness.p99"] = benchFig("median -unit p99-stale-µs docs/bench/2026-12-02-staleness.txt CoarseStalenessSaturated")
}
