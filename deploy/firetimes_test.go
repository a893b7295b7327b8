package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The fire-time tests run every alert through promtool with 15 s scrapes and a 1 m
// evaluation interval, at three scrape phases (scrapes at 0 s, 5 s or 10 s past each
// 15 s mark, evaluations on the minute), with events that fall between scrapes. They
// measure when each alert starts firing and check it against the window the alert
// table documents (firesFrom, firesBy), and that the series meant to stay quiet never
// fire. promtool has no evaluation offset; series on a 5 s grid with gaps ("_") are
// scrapes at an offset.

const (
	scrapeEvery = 15 * time.Second
	evalEvery   = time.Minute
	grid        = 5 * time.Second
)

var phases = []time.Duration{0, 5 * time.Second, 10 * time.Second}

// sample is one scrape's value of a series: present (ok), missing, or a staleness marker.
type sample struct {
	v     float64
	ok    bool
	stale bool
}

func val(v float64) sample { return sample{v: v, ok: true} }

var (
	missing = sample{}
	stale   = sample{stale: true}
)

type fireSeries struct {
	name string
	at   func(t time.Duration) sample // the value a scrape at t reads
}

// encode writes the series in promtool's notation on the 5 s grid: a value at each
// scrape (phase + k·15 s), "_" between them.
func (s fireSeries) encode(phase, end time.Duration) string {
	var out []string
	gap := 0
	flush := func() {
		switch {
		case gap == 1:
			out = append(out, "_")
		case gap > 1:
			out = append(out, fmt.Sprintf("_x%d", gap))
		}
		gap = 0
	}
	for t := time.Duration(0); t <= end; t += grid {
		if t < phase || (t-phase)%scrapeEvery != 0 {
			gap++
			continue
		}
		smp := s.at(t)
		switch {
		case smp.stale:
			flush()
			out = append(out, "stale")
		case smp.ok:
			flush()
			out = append(out, strconv.FormatFloat(smp.v, 'f', -1, 64))
		default:
			gap++
		}
	}
	flush()
	return strings.Join(out, " ")
}

type fireScenario struct {
	name   string
	alert  string
	end    time.Duration
	series []fireSeries
	// event is when the thing the alert is about happened (the failover, the fourth
	// trip, the breaker opening, ...): the alert table documents fire times from it.
	event time.Duration
	// The series labelled case="fires" must start firing at an evaluation in
	// [firesFrom, firesBy]; case="quiet" series must never fire.
	firesFrom, firesBy time.Duration
	// stopsBy, when set, is the evaluation by which the fires case must have stopped.
	stopsBy time.Duration
	// settle: evaluations before it are not checked. A series present from the start
	// has no history, so it looks born at 0.
	settle time.Duration
}

// counter is a counter that steps by one at each of the given times (a scrape at t sees
// the steps at or before t), present from `from` on.
func counter(from time.Duration, steps ...time.Duration) func(time.Duration) sample {
	return func(t time.Duration) sample {
		if t < from {
			return missing
		}
		n := 0
		for _, s := range steps {
			if s <= t {
				n++
			}
		}
		return val(float64(n))
	}
}

func constant(v float64) func(time.Duration) sample {
	return func(time.Duration) sample { return val(v) }
}

// age is a gauge reading the time since `since` while t is in [since, until), else 0.
func age(since, until time.Duration) func(time.Duration) sample {
	return func(t time.Duration) sample {
		if t < since || t >= until {
			return val(0)
		}
		return val((t - since).Seconds())
	}
}

// ratePerScrape is a counter that grows by n at each scrape in [from, until).
func ratePerScrape(from, until time.Duration, n float64) func(time.Duration) sample {
	return func(t time.Duration) sample {
		if t < from {
			return val(0)
		}
		t = min(t, until)
		return val(float64((t-from)/scrapeEvery+1) * n)
	}
}

func minutes(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }

const (
	restartAt   = 20*time.Minute + 7*time.Second // a process restart, between scrapes
	oldStart    = 1000.0                         // agentbreaker_start_time_seconds before it
	newStart    = oldStart + 1207                // and after it
	failoverAt  = 9*time.Minute + 37*time.Second
	restartFail = restartAt + 4*time.Second // a failover 4 s after the restart
)

var fireScenarios = []fireScenario{
	{
		name: "model failover, first of a route pair", alert: "AgentbreakerModelFailover", end: minutes(20),
		series: []fireSeries{
			{`agentbreaker_start_time_seconds{job="a",instance="i"}`, constant(oldStart)},
			{`agentbreaker_model_failovers_total{job="a",instance="i",case="fires",from="pro@us",to="pro@eu",cause="breaker_open"}`, counter(failoverAt, failoverAt)},
			// A failover long ago: the counter exists but does not move.
			{`agentbreaker_model_failovers_total{job="a",instance="i",case="quiet",from="flash@us",to="flash@eu",cause="breaker_open"}`, counter(0, 0)},
			// A return to the primary is announced, but it is good news: it never fires.
			{`agentbreaker_model_failovers_total{job="a",instance="i",case="quiet",from="pro@eu",to="pro@us",cause="probe_succeeded"}`, counter(failoverAt, failoverAt)},
		},
		event:     failoverAt,
		firesFrom: failoverAt, firesBy: failoverAt + scrapeEvery + evalEvery,
		stopsBy: failoverAt + 5*time.Minute + scrapeEvery + evalEvery, settle: 6 * time.Minute,
	},
	{
		name: "model failover right after a restart", alert: "AgentbreakerModelFailover", end: minutes(32),
		series: []fireSeries{
			{`agentbreaker_start_time_seconds{job="a",instance="i"}`, func(t time.Duration) sample {
				if t < restartAt {
					return val(oldStart)
				}
				return val(newStart)
			}},
			// The previous process failed over before the test began; the new one fails over
			// again, on the same pair, before its first scrape: the series reads 1 throughout.
			{`agentbreaker_model_failovers_total{job="a",instance="i",case="fires",from="pro@us",to="pro@eu",cause="breaker_open"}`, func(t time.Duration) sample {
				if t < restartAt {
					return val(1)
				}
				return val(1)
			}},
			// The previous process failed over on another pair; the new one does not:
			// its series goes stale at the first scrape after the restart.
			{`agentbreaker_model_failovers_total{job="a",instance="i",case="quiet",from="flash@us",to="flash@eu",cause="breaker_open"}`, func(t time.Duration) sample {
				switch {
				case t < restartAt:
					return counter(0, 0)(t)
				case t < restartAt+scrapeEvery:
					return stale
				}
				return missing
			}},
		},
		event:     restartFail,
		firesFrom: restartFail, firesBy: restartFail + scrapeEvery + evalEvery,
		stopsBy: restartFail + 5*time.Minute + scrapeEvery + evalEvery, settle: 6 * time.Minute,
	},
	{
		name: "fallback serving sustained", alert: "AgentbreakerFallbackServingSustained", end: minutes(40),
		series: []fireSeries{
			{`agentbreaker_model_fallback_ratio{case="fires",job="support"}`, func(t time.Duration) sample {
				if t < minutes(5)+20*time.Second {
					return val(0.1)
				}
				return val(0.8)
			}},
			// Above 50% for 14 minutes, then below.
			{`agentbreaker_model_fallback_ratio{case="quiet",job="billing"}`, func(t time.Duration) sample {
				if t >= minutes(5)+20*time.Second && t < minutes(19)+20*time.Second {
					return val(0.9)
				}
				return val(0.2)
			}},
		},
		event:     minutes(5) + 20*time.Second,
		firesFrom: minutes(20) + 20*time.Second, firesBy: minutes(21) + 35*time.Second,
	},
	{
		name: "sustained shedding", alert: "AgentbreakerSheddingSustained", end: minutes(30),
		series: []fireSeries{
			{`agentbreaker_throttle_shed_share{case="fires",dependency="search"}`, func(t time.Duration) sample {
				if t < minutes(4)+40*time.Second {
					return val(0.05)
				}
				return val(0.5)
			}},
			// Above 25% for 9 minutes, then below.
			{`agentbreaker_throttle_shed_share{case="quiet",dependency="maps"}`, func(t time.Duration) sample {
				if t >= minutes(4)+40*time.Second && t < minutes(13)+40*time.Second {
					return val(0.9)
				}
				return val(0.1)
			}},
		},
		event:     minutes(4) + 40*time.Second,
		firesFrom: minutes(14) + 40*time.Second, firesBy: minutes(15) + 55*time.Second,
	},
	{
		name: "adaptive limit at its floor", alert: "AgentbreakerAdaptiveLimitAtFloor", end: minutes(30),
		series: []fireSeries{
			{`agentbreaker_adaptive_limit{case="fires",dependency="search"}`, func(t time.Duration) sample {
				if t < minutes(4)+40*time.Second {
					return val(20)
				}
				return val(2)
			}},
			{`agentbreaker_adaptive_limit_min{case="fires",dependency="search"}`, func(time.Duration) sample { return val(2) }},
			// At the floor for 9 minutes, then above.
			{`agentbreaker_adaptive_limit{case="quiet",dependency="maps"}`, func(t time.Duration) sample {
				if t >= minutes(4)+40*time.Second && t < minutes(13)+40*time.Second {
					return val(2)
				}
				return val(9)
			}},
			{`agentbreaker_adaptive_limit_min{case="quiet",dependency="maps"}`, func(time.Duration) sample { return val(2) }},
		},
		event:     minutes(4) + 40*time.Second,
		firesFrom: minutes(14) + 40*time.Second, firesBy: minutes(15) + 55*time.Second,
	},
	{
		name: "breaker open too long", alert: "AgentbreakerBreakerOpenTooLong", end: minutes(40),
		series: []fireSeries{
			{`agentbreaker_breaker_open_duration_seconds{case="fires",dependency="crm"}`, age(minutes(3)+20*time.Second, minutes(60))},
			// Open for 14m45s, then closed.
			{`agentbreaker_breaker_open_duration_seconds{case="quiet",dependency="weather"}`, age(minutes(3)+20*time.Second, minutes(18)+5*time.Second)},
		},
		// The first evaluation more than 15 minutes after it opened.
		event:     minutes(3) + 20*time.Second,
		firesFrom: minutes(18) + 20*time.Second, firesBy: minutes(19) + 20*time.Second,
	},
	{
		name: "breaker flapping", alert: "AgentbreakerBreakerFlapping", end: minutes(40),
		series: []fireSeries{
			// Four trips within 21 minutes: fires at the fourth.
			{`agentbreaker_breaker_transitions_total{case="fires",dependency="crm",from="closed",to="open",cause="failure_rate"}`,
				counter(0, minutes(2)+10*time.Second, minutes(9)+50*time.Second, minutes(16)+25*time.Second, minutes(23)+5*time.Second)},
			// Three trips in four minutes, and three more 31 minutes later: never four in 30.
			{`agentbreaker_breaker_transitions_total{case="quiet",dependency="search",from="closed",to="open",cause="failure_rate"}`,
				counter(0, minutes(1)+7*time.Second, minutes(3)+44*time.Second, minutes(5)+2*time.Second, minutes(36)+8*time.Second, minutes(37)+8*time.Second, minutes(38)+8*time.Second)},
			// One trip, then a long outage of failing probes (half_open -> open).
			{`agentbreaker_breaker_transitions_total{case="quiet",dependency="maps",from="closed",to="open",cause="failure_rate"}`, counter(0, minutes(1)+3*time.Second)},
			{`agentbreaker_breaker_transitions_total{case="quiet",dependency="maps",from="half_open",to="open",cause="probe_failed"}`,
				counter(0, minutes(2), minutes(3), minutes(4), minutes(5), minutes(6), minutes(7), minutes(8), minutes(9))},
		},
		event:     minutes(23) + 5*time.Second,
		firesFrom: minutes(23) + 5*time.Second, firesBy: minutes(23) + 5*time.Second + scrapeEvery + evalEvery,
		// Until the first trip leaves the 30-minute window.
		stopsBy: minutes(32) + 10*time.Second + scrapeEvery + evalEvery,
	},
	{
		name: "breaker flapping across a restart", alert: "AgentbreakerBreakerFlapping", end: minutes(30),
		series: []fireSeries{
			// Two trips, a restart (the counter starts again at 0), two more trips.
			{`agentbreaker_breaker_transitions_total{case="fires",dependency="crm",from="closed",to="open",cause="failure_rate"}`, func(t time.Duration) sample {
				if t < restartAt {
					return counter(0, minutes(3)+10*time.Second, minutes(8)+40*time.Second)(t)
				}
				return counter(restartAt, minutes(22)+20*time.Second, minutes(25)+50*time.Second)(t)
			}},
			// Two trips, a restart, one more: three.
			{`agentbreaker_breaker_transitions_total{case="quiet",dependency="search",from="closed",to="open",cause="failure_rate"}`, func(t time.Duration) sample {
				if t < restartAt {
					return counter(0, minutes(4)+10*time.Second, minutes(9)+40*time.Second)(t)
				}
				return counter(restartAt, minutes(23)+20*time.Second)(t)
			}},
		},
		event:     minutes(25) + 50*time.Second,
		firesFrom: minutes(25) + 50*time.Second, firesBy: minutes(25) + 50*time.Second + scrapeEvery + evalEvery,
	},
	{
		name: "bulkhead rejecting while closed", alert: "AgentbreakerBulkheadRejectingWhileClosed", end: minutes(30),
		series: []fireSeries{
			{`agentbreaker_bulkhead_rejections_total{case="fires",dependency="crm"}`, ratePerScrape(minutes(6)+40*time.Second, minutes(60), 4)},
			{`agentbreaker_breaker_state{dependency="crm",state="closed"}`, constant(1)},
			// A four-minute burst: no alert.
			{`agentbreaker_bulkhead_rejections_total{case="quiet",dependency="search"}`, ratePerScrape(minutes(3)+40*time.Second, minutes(7)+40*time.Second, 4)},
			{`agentbreaker_breaker_state{dependency="search",state="closed"}`, constant(1)},
			// The one-minute burst of the issue: no alert.
			{`agentbreaker_bulkhead_rejections_total{case="quiet",dependency="maps"}`, ratePerScrape(minutes(12)+10*time.Second, minutes(13)+10*time.Second, 20)},
			{`agentbreaker_breaker_state{dependency="maps",state="closed"}`, constant(1)},
			// Rejections while the breaker is open are expected: no alert.
			{`agentbreaker_bulkhead_rejections_total{case="quiet",dependency="mail"}`, ratePerScrape(minutes(2), minutes(60), 4)},
			{`agentbreaker_breaker_state{dependency="mail",state="closed"}`, constant(0)},
		},
		event:     minutes(6) + 40*time.Second,
		firesFrom: minutes(11) + 40*time.Second, firesBy: minutes(12) + 55*time.Second,
	},
	{
		name: "probe success low", alert: "AgentbreakerProbeSuccessLow", end: minutes(40),
		series: []fireSeries{
			// A failed probe every 2 minutes from 1m10s: the fifth at 9m10s.
			{`agentbreaker_breaker_probes_total{case="fires",dependency="crm",result="succeeded"}`, constant(0)},
			{`agentbreaker_breaker_probes_total{case="fires",dependency="crm",result="failed"}`,
				counter(0, minutes(1)+10*time.Second, minutes(3)+10*time.Second, minutes(5)+10*time.Second, minutes(7)+10*time.Second, minutes(9)+10*time.Second)},
			// Four failed probes: too few to judge.
			{`agentbreaker_breaker_probes_total{case="quiet",dependency="weather",result="succeeded"}`, constant(0)},
			{`agentbreaker_breaker_probes_total{case="quiet",dependency="weather",result="failed"}`,
				counter(0, minutes(1)+10*time.Second, minutes(3)+10*time.Second, minutes(5)+10*time.Second, minutes(7)+10*time.Second)},
			// One in five succeeds: 20% is not under 20%.
			{`agentbreaker_breaker_probes_total{case="quiet",dependency="search",result="succeeded"}`, counter(0, minutes(2))},
			{`agentbreaker_breaker_probes_total{case="quiet",dependency="search",result="failed"}`,
				counter(0, minutes(1), minutes(3), minutes(5), minutes(7))},
		},
		event:     minutes(9) + 10*time.Second,
		firesFrom: minutes(19) + 10*time.Second, firesBy: minutes(20) + 25*time.Second,
	},
	{
		name: "journal intents unreconciled", alert: "AgentbreakerJournalIntentsUnreconciled", end: minutes(40),
		series: []fireSeries{
			{`agentbreaker_journal_oldest_pending_age_seconds{case="fires",job="support"}`, age(minutes(2)+50*time.Second, minutes(60))},
			// Reconciled after 14m50s.
			{`agentbreaker_journal_oldest_pending_age_seconds{case="quiet",job="billing"}`, age(minutes(2)+50*time.Second, minutes(17)+40*time.Second)},
		},
		event:     minutes(2) + 50*time.Second,
		firesFrom: minutes(17) + 50*time.Second, firesBy: minutes(18) + 50*time.Second,
	},
	{
		name: "fleet breakers deciding locally", alert: "AgentbreakerFleetLocal", end: minutes(30),
		series: []fireSeries{
			// Redis unreachable from replica a at 6m40s: two breakers go local one sync
			// later (LocalAfter is under a second: the scrape sees both at once).
			{`agentbreaker_fleet_local{case="fires",job="agent",instance="a",dependency="crm"}`, local(minutes(6)+40*time.Second, minutes(60))},
			{`agentbreaker_fleet_local{case="fires",job="agent",instance="a",dependency="search"}`, local(minutes(6)+40*time.Second, minutes(60))},
			// A Redis failover of 4m50s seen from replica b: no alert.
			{`agentbreaker_fleet_local{case="quiet",job="agent",instance="b",dependency="crm"}`, local(minutes(3)+10*time.Second, minutes(8))},
			// Redis lost for two minutes, back for 90 s (an evaluation sees it back at
			// every phase), lost again for three and a half: seven minutes in all, but
			// the pending alert starts over, so no alert.
			{`agentbreaker_fleet_local{case="quiet",job="agent",instance="c",dependency="crm"}`, func(t time.Duration) sample {
				if v := local(minutes(2), minutes(4))(t); v.v == 1 {
					return v
				}
				return local(minutes(5)+30*time.Second, minutes(9))(t)
			}},
			// A breaker's first sync (local for a few hundred milliseconds) never shows
			// for long: always fleet-wide at the scrapes.
			{`agentbreaker_fleet_local{case="quiet",job="agent",instance="d",dependency="crm"}`, constant(0)},
		},
		event:     minutes(6) + 40*time.Second,
		firesFrom: minutes(11) + 40*time.Second, firesBy: minutes(12) + 55*time.Second,
	},
}

// local is agentbreaker_fleet_local: 1 while t is in [since, until), else 0.
func local(since, until time.Duration) func(time.Duration) sample {
	return func(t time.Duration) sample {
		if t >= since && t < until {
			return val(1)
		}
		return val(0)
	}
}

// bareRules writes a copy of the rules without annotations, so that the generated
// tests compare labels only.
func bareRules(t *testing.T, dir string) {
	t.Helper()
	raw, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	for _, g := range doc["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			delete(r.(map[string]any), "annotations")
		}
	}
	out, err := yaml.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yml"), out, 0o600))
}

var (
	gotAlert  = regexp.MustCompile(`alertname: (\w+), time: (\w+),`)
	gotLabels = regexp.MustCompile(`Labels:\{([^}]*)\}`)
	gotCase   = regexp.MustCompile(`case="(\w+)"`)
)

// fireTimes runs promtool on one scenario at one phase, expecting no alert at every
// evaluation, and reads from its failure report the evaluations at which the fires and
// quiet cases fired.
func fireTimes(t *testing.T, promtool, dir string, sc fireScenario, phase time.Duration) (fires, quiet []time.Duration) {
	t.Helper()
	type test struct {
		Name        string              `yaml:"name"`
		Interval    string              `yaml:"interval"`
		InputSeries []map[string]string `yaml:"input_series"`
		AlertTests  []map[string]any    `yaml:"alert_rule_test"`
	}
	tc := test{Name: sc.name, Interval: grid.String()}
	for _, s := range sc.series {
		tc.InputSeries = append(tc.InputSeries, map[string]string{"series": s.name, "values": s.encode(phase, sc.end)})
	}
	for e := time.Duration(0); e <= sc.end; e += evalEvery {
		tc.AlertTests = append(tc.AlertTests, map[string]any{"eval_time": e.String(), "alertname": sc.alert})
	}
	doc := map[string]any{"rule_files": []string{"rules.yml"}, "evaluation_interval": evalEvery.String(), "tests": []test{tc}}
	raw, err := yaml.Marshal(doc)
	require.NoError(t, err)
	file := filepath.Join(dir, fmt.Sprintf("%s-%s.test.yml", strings.ReplaceAll(sc.name, " ", "_"), phase))
	require.NoError(t, os.WriteFile(file, raw, 0o600))

	out, err := exec.CommandContext(t.Context(), promtool, "test", "rules", file).CombinedOutput()
	report := string(out)
	if err == nil {
		return nil, nil // nothing fired at all
	}
	require.Contains(t, report, "FAILED", "promtool could not run %s:\n%s", file, report)
	blocks := gotAlert.FindAllStringSubmatchIndex(report, -1)
	require.NotEmpty(t, blocks, "unexpected promtool report for %s:\n%s", file, report)
	for i, b := range blocks {
		end := len(report)
		if i+1 < len(blocks) {
			end = blocks[i+1][0]
		}
		at, err := time.ParseDuration(report[b[4]:b[5]])
		require.NoError(t, err)
		if at < sc.settle {
			continue
		}
		for _, l := range gotLabels.FindAllStringSubmatch(report[b[1]:end], -1) {
			m := gotCase.FindStringSubmatch(l[1])
			require.NotNil(t, m, "an alert without a case label: %s", l[1])
			switch m[1] {
			case "fires":
				fires = append(fires, at)
			case "quiet":
				quiet = append(quiet, at)
			}
		}
	}
	return fires, quiet
}

// TestAlertFireTimes measures when each alert fires, at every scrape phase, and checks
// it against the documented window.
func TestAlertFireTimes(t *testing.T) {
	t.Parallel()
	promtool := needPromtool(t)
	dir := t.TempDir()
	bareRules(t, dir)
	alerts := map[string]bool{}
	for _, sc := range fireScenarios {
		alerts[sc.alert] = true
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			for _, phase := range phases {
				fires, quiet := fireTimes(t, promtool, dir, sc, phase)
				require.Empty(t, quiet, "phase %s: a quiet series fired at these evaluations", phase)
				require.NotEmpty(t, fires, "phase %s: the alert never fired", phase)
				first, last := slices.Min(fires), slices.Max(fires)
				t.Logf("phase %5s: fires from %s to %s (documented first firing: %s to %s)", phase, first, last, sc.firesFrom, sc.firesBy)
				require.GreaterOrEqual(t, first, sc.firesFrom, "phase %s: fired too early", phase)
				require.LessOrEqual(t, first, sc.firesBy, "phase %s: fired too late", phase)
				// It keeps firing once it fires (no gaps).
				require.Len(t, fires, int((last-first)/evalEvery)+1, "phase %s: firing has gaps: %v", phase, fires)
				if sc.stopsBy > 0 {
					require.Less(t, last, sc.stopsBy, "phase %s: still firing at %s", phase, last)
				} else {
					require.Equal(t, sc.end, last, "phase %s: stopped firing at %s", phase, last)
				}
			}
		})
	}
	rules := loadYAML[ruleFile](t, rulesFile)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			require.True(t, alerts[r.Alert], "%s has no fire-time scenario", r.Alert)
		}
	}
}

// needPromtool finds promtool, or skips (fails under CI=true).
func needPromtool(t *testing.T) string {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool is not on PATH (CI=true): install it with apt-get install -y prometheus: %v", err)
		}
		t.Skipf("promtool is not on PATH; install Debian's prometheus package to run the rule tests: %v", err)
	}
	return promtool
}
