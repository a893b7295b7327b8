package otelmetrics_test

import (
	"fmt"
	"maps"
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

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
	"github.com/agentbreaker/agentbreaker/telemetry/otelmetrics"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// These tests run the project's alert rules (deploy/prometheus/agentbreaker.rules.yml)
// through promtool on series that the OpenTelemetry path produced: a real adapter on
// the SDK, driven through each alert's incident by real breakers, throttles and
// reports on a fake clock, gathered from OpenTelemetry's Prometheus exporter every 15 s
// at three scrape phases, exactly as deploy's TestAlertFireTimes scrapes its synthetic
// series. Each alert must first fire inside the window the alert table of
// docs/operations.md documents (the windows deploy's test measures), and the series of
// an incident that must not fire (a second process, instance "b") never fire it.

const (
	rulesFile   = "../../deploy/prometheus/agentbreaker.rules.yml"
	scrapeEvery = 15 * time.Second
	evalEvery   = time.Minute
	grid        = 5 * time.Second
)

var phases = []time.Duration{0, 5 * time.Second, 10 * time.Second}

func minutes(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }

// incident drives one process's adapter: setup wires real parts to m on clk and
// returns the step called once per simulated second (at is the time since the start;
// the clock reads epoch+at), which makes the events due then.
type incident func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) (step func(at time.Duration))

type otelScenario struct {
	name, alert string
	end         time.Duration
	fires       incident // instance "a", case="fires"
	quiet       incident // instance "b", case="quiet"; nil when none
	// event is when the thing the alert is about happened; the window of the first
	// firing, [firesFrom, firesBy], is the one the alert table of docs/operations.md
	// documents from it (checked), which deploy's fire-time scenarios measure.
	event              time.Duration
	firesFrom, firesBy time.Duration
	// stopsBy, when set, is the evaluation by which firing must have stopped;
	// otherwise it fires to the end.
	stopsBy time.Duration
	settle  time.Duration
}

// policy is a breaker that trips on its first failed call and waits cooldown.
func policy(cooldown time.Duration) breaker.Policy {
	return breaker.Policy{MinimumCalls: 1, Jitter: -1, Cooldown: cooldown, CooldownMultiplier: 1, MaxCooldown: cooldown}
}

// mapOf builds a dependency map of one dependency with policy p, watched by m.
func mapOf(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake, name string, p breaker.Policy) *breaker.Breaker {
	t.Helper()
	deps := dependencymap.MustNew(dependencymap.Config{Clock: clk,
		Dependencies:  map[string]dependencymap.Dependency{name: {Tools: []string{name + "_tool"}, Policy: p}},
		OnStateChange: []func(breaker.Event){m.BreakerEvent}})
	m.Watch(deps)
	b, _ := deps.Get(name)
	return b
}

func trip(t *testing.T, b *breaker.Breaker) {
	t.Helper()
	p, err := b.Allow()
	require.NoError(t, err, "trip %s", b.Name())
	p.Failure()
}

func probe(t *testing.T, b *breaker.Breaker, ok bool) {
	t.Helper()
	p, err := b.Allow()
	require.NoError(t, err, "probe %s", b.Name())
	require.True(t, p.IsProbe(), "a probe of %s", b.Name())
	if ok {
		p.Success()
	} else {
		p.Failure()
	}
}

// at returns a step that runs f once at each of the times.
func at(times []time.Duration, f func(time.Duration)) func(time.Duration) {
	return func(now time.Duration) {
		if slices.Contains(times, now) {
			f(now)
		}
	}
}

func sec(m, s int) time.Duration { return time.Duration(m)*time.Minute + time.Duration(s)*time.Second }

// trips opens b at each time and closes it with a successful probe a minute later.
func trips(t *testing.T, b *breaker.Breaker, times ...time.Duration) func(time.Duration) {
	return func(now time.Duration) {
		for _, tr := range times {
			switch now {
			case tr:
				trip(t, b)
			case tr + time.Minute:
				probe(t, b, true)
			}
		}
	}
}

type fleetScopes struct{ local func() bool }

func (f fleetScopes) Scope(string) string {
	if f.local() {
		return "local"
	}
	return "fleet"
}
func (fleetScopes) Counters() (syncs, failures, outages, commands int64) { return 0, 0, 0, 0 }

type throttles []*throttle.Throttle

func (ts throttles) Throttles() []*throttle.Throttle { return ts }

// shedding is a throttle of search whose dependency accepts every call until from,
// then (until until) one call in four: partly overloaded, it sheds about half of them.
// Its window is 5 s, so the share rises within a scrape of the overload, as the
// synthetic share of deploy's scenario does.
func shedding(from, until time.Duration) incident {
	return func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
		th, err := throttle.New(throttle.Config{Name: "search", Clock: clk, MinRequests: 1, Window: 5 * time.Second, Buckets: 5})
		require.NoError(t, err)
		m.WatchThrottles(throttles{th})
		return func(now time.Duration) {
			overloaded := now >= from && now < until
			for i := range 4 {
				th.Report(!overloaded || i == 0)
			}
		}
	}
}

// slowing is the adaptive limit of a dependency (20, floor 2, one update a second on
// one sample) called once a second. It answers in 100 ms, then in 10 s from 3 s before
// floor until until: each update halves the limit (20, 10, 5, 3, then 2), so it reaches
// its floor at floor, checked at every step, and stays there until until, when the
// fast answers raise it again.
func slowing(name string, floor, until time.Duration) incident {
	return func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
		l, err := adaptivelimit.New(adaptivelimit.Config{Name: name, MinLimit: 2, InitialLimit: 20, MinSamples: 1,
			UpdateInterval: time.Second, NoLoadInterval: 24 * time.Hour, Clock: clk})
		require.NoError(t, err)
		m.WatchLimits(limitList{l})
		return func(now time.Duration) {
			latency := 100 * time.Millisecond
			if now >= floor-3*time.Second && now < until {
				latency = 10 * time.Second
			}
			p, err := l.AcquireAt(clk.Now().Add(-latency), throttle.Normal)
			require.NoError(t, err)
			p.DoneAt(clk.Now())
			require.Equal(t, now >= floor && now < until, l.AtFloor(), "%s at %s: limit %d", name, now, l.Limit())
		}
	}
}

var otelScenarios = []otelScenario{
	{
		name: "model failover", alert: "AgentbreakerModelFailover", end: minutes(20),
		fires: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			return at([]time.Duration{sec(9, 37)}, func(time.Duration) {
				m.Failover(t.Context(), observe.Failover{From: "pro@us", To: "pro@eu", Cause: "breaker_open"})
			})
		},
		// A return to the primary is good news: it never fires.
		quiet: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			return at([]time.Duration{sec(9, 37)}, func(time.Duration) {
				m.Failover(t.Context(), observe.Failover{From: "pro@eu", To: "pro@us", Cause: "probe_succeeded"})
			})
		},
		event:     sec(9, 37),
		firesFrom: sec(9, 37), firesBy: sec(9, 37) + scrapeEvery + evalEvery,
		stopsBy: sec(9, 37) + 5*time.Minute + scrapeEvery + evalEvery, settle: 6 * time.Minute,
	},
	{
		name: "fallback serving sustained", alert: "AgentbreakerFallbackServingSustained", end: minutes(40),
		fires: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			return func(now time.Duration) {
				if now < sec(5, 20) {
					m.FallbackShare(0.1)
				} else {
					m.FallbackShare(0.8)
				}
			}
		},
		quiet: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			return func(now time.Duration) {
				if now >= sec(5, 20) && now < sec(19, 20) {
					m.FallbackShare(0.9)
				} else {
					m.FallbackShare(0.2)
				}
			}
		},
		event:     sec(5, 20),
		firesFrom: sec(20, 20), firesBy: sec(21, 35),
	},
	{
		name: "sustained shedding", alert: "AgentbreakerSheddingSustained", end: minutes(30),
		fires: shedding(sec(4, 40), minutes(60)), quiet: shedding(sec(4, 40), sec(13, 40)),
		event:     sec(4, 40),
		firesFrom: sec(14, 40), firesBy: sec(15, 55),
	},
	{
		// At its floor from 4m40s; the quiet one for 9 minutes only.
		name: "adaptive limit at its floor", alert: "AgentbreakerAdaptiveLimitAtFloor", end: minutes(30),
		fires: slowing("search", sec(4, 40), minutes(60)), quiet: slowing("maps", sec(4, 40), sec(13, 40)),
		event:     sec(4, 40),
		firesFrom: sec(14, 40), firesBy: sec(15, 55),
	},
	{
		name: "breaker open too long", alert: "AgentbreakerBreakerOpenTooLong", end: minutes(40),
		fires: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			b := mapOf(t, m, clk, "crm", policy(24*time.Hour))
			return at([]time.Duration{sec(3, 20)}, func(time.Duration) { trip(t, b) })
		},
		// Open for 14m45s, then reset by an operator.
		quiet: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			b := mapOf(t, m, clk, "weather", policy(24*time.Hour))
			return func(now time.Duration) {
				switch now {
				case sec(3, 20):
					trip(t, b)
				case sec(18, 5):
					b.Reset("dependency fixed")
				}
			}
		},
		event:     sec(3, 20),
		firesFrom: sec(18, 20), firesBy: sec(19, 20),
	},
	{
		name: "breaker flapping", alert: "AgentbreakerBreakerFlapping", end: minutes(40),
		fires: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			return trips(t, mapOf(t, m, clk, "crm", policy(30*time.Second)), sec(2, 10), sec(9, 50), sec(16, 25), sec(23, 5))
		},
		// Three trips in four minutes, three more 31 minutes later: never four in 30.
		quiet: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			return trips(t, mapOf(t, m, clk, "search", policy(30*time.Second)), sec(1, 7), sec(3, 44), sec(5, 2), sec(36, 8), sec(37, 18), sec(38, 28))
		},
		event:     sec(23, 5),
		firesFrom: sec(23, 5), firesBy: sec(23, 5) + scrapeEvery + evalEvery,
		stopsBy: sec(32, 10) + scrapeEvery + evalEvery,
	},
	{
		name: "bulkhead rejecting while closed", alert: "AgentbreakerBulkheadRejectingWhileClosed", end: minutes(30),
		fires: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			mapOf(t, m, clk, "crm", policy(time.Minute))
			return func(now time.Duration) {
				if now == sec(0, 10) {
					// One rejection long before: the series exists, as deploy's
					// synthetic one does from the start (rate() needs a sample
					// before the first increase it counts).
					m.BulkheadRejected(t.Context(), "crm")
				}
				if now >= sec(6, 40) && (now-sec(6, 40))%scrapeEvery == 0 {
					for range 4 {
						m.BulkheadRejected(t.Context(), "crm")
					}
				}
			}
		},
		// Rejections while the breaker is open are expected: no alert.
		quiet: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			b := mapOf(t, m, clk, "mail", policy(24*time.Hour))
			return func(now time.Duration) {
				if now == sec(1, 0) {
					trip(t, b)
				}
				if now >= sec(2, 0) && now%scrapeEvery == 0 {
					for range 4 {
						m.BulkheadRejected(t.Context(), "mail")
					}
				}
			}
		},
		event:     sec(6, 40),
		firesFrom: sec(11, 40), firesBy: sec(12, 55),
	},
	{
		name: "probe success low", alert: "AgentbreakerProbeSuccessLow", end: minutes(40),
		// Tripped at 10 s; a failed probe every 2 minutes from 1m10s: the fifth at 9m10s.
		fires: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			b := mapOf(t, m, clk, "crm", policy(30*time.Second))
			return func(now time.Duration) {
				switch {
				case now == sec(0, 10):
					trip(t, b)
				case now >= sec(1, 10) && now <= sec(9, 10) && (now-sec(1, 10))%(2*time.Minute) == 0:
					probe(t, b, false)
				}
			}
		},
		// Four failed probes: too few to judge.
		quiet: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			b := mapOf(t, m, clk, "weather", policy(30*time.Second))
			return func(now time.Duration) {
				switch {
				case now == sec(0, 10):
					trip(t, b)
				case now >= sec(1, 10) && now <= sec(7, 10) && (now-sec(1, 10))%(2*time.Minute) == 0:
					probe(t, b, false)
				}
			}
		},
		event:     sec(9, 10),
		firesFrom: sec(19, 10), firesBy: sec(20, 25),
	},
	{
		name: "journal intents unreconciled", alert: "AgentbreakerJournalIntentsUnreconciled", end: minutes(40),
		fires: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			return func(now time.Duration) {
				if now < sec(2, 50) {
					m.JournalPending(0, time.Time{})
				} else if now == sec(2, 50) {
					m.JournalPending(1, clk.Now())
				}
			}
		},
		// Reconciled after 14m50s.
		quiet: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			return func(now time.Duration) {
				switch {
				case now < sec(2, 50) || now >= sec(17, 40):
					m.JournalPending(0, time.Time{})
				case now == sec(2, 50):
					m.JournalPending(1, clk.Now())
				}
			}
		},
		event:     sec(2, 50),
		firesFrom: sec(17, 50), firesBy: sec(18, 50),
	},
	{
		name: "fleet breakers deciding locally", alert: "AgentbreakerFleetLocal", end: minutes(30),
		// Redis unreachable from 6m40s: both breakers go local.
		fires: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			mapOf(t, m, clk, "crm", policy(time.Minute))
			mapOf(t, m, clk, "search", policy(time.Minute))
			var now time.Duration
			m.WatchFleet(fleetScopes{local: func() bool { return now >= sec(6, 40) }})
			return func(at time.Duration) { now = at }
		},
		// A Redis failover of 4m50s: no alert.
		quiet: func(t *testing.T, m *otelmetrics.Metrics, clk *clock.Fake) func(time.Duration) {
			mapOf(t, m, clk, "crm", policy(time.Minute))
			var now time.Duration
			m.WatchFleet(fleetScopes{local: func() bool { return now >= sec(3, 10) && now < sec(8, 0) }})
			return func(at time.Duration) { now = at }
		},
		event:     sec(6, 40),
		firesFrom: sec(11, 40), firesBy: sec(12, 55),
	},
}

// scrapes runs one process through its incident and returns, for each series the
// exporter showed, its value at each scrape (phase + k·15 s); NaN marks a scrape
// that did not show it.
func scrapes(t *testing.T, inc incident, phase, end time.Duration, extra string) map[string]map[time.Duration]float64 {
	t.Helper()
	clk := clock.NewFake(epoch)
	p := newOTelPath(t, otelmetrics.Config{Clock: clk})
	step := inc(t, p.m, clk)
	out := map[string]map[time.Duration]float64{}
	for now := time.Duration(0); now <= end; now += time.Second {
		if now > 0 {
			clk.Advance(time.Second)
		}
		step(now)
		if now < phase || (now-phase)%scrapeEvery != 0 {
			continue
		}
		for _, s := range gather(t, p.reg, "") {
			s.labels["job"], s.labels["instance"], s.labels["case"] = "agent", extra, map[string]string{"a": "fires", "b": "quiet"}[extra]
			k := s.key()
			if out[k] == nil {
				out[k] = map[time.Duration]float64{}
			}
			out[k][now] = s.value
		}
	}
	return out
}

// encode writes a series in promtool's notation on the 5 s grid: a value at each
// scrape that showed it, "_" elsewhere.
func encode(values map[time.Duration]float64, end time.Duration) string {
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
		v, ok := values[t]
		if !ok {
			gap++
			continue
		}
		flush()
		out = append(out, strconv.FormatFloat(v, 'f', -1, 64))
	}
	flush()
	return strings.Join(out, " ")
}

var (
	gotAlert  = regexp.MustCompile(`alertname: (\w+), time: (\w+),`)
	gotLabels = regexp.MustCompile(`Labels:\{([^}]*)\}`)
	gotCase   = regexp.MustCompile(`case="(\w+)"`)
)

// fireTimes writes the scraped series as a promtool test expecting no alert at every
// evaluation and reads from promtool's failure report when each case fired.
func fireTimes(t *testing.T, promtool, dir string, sc otelScenario, phase time.Duration) (fires, quiet []time.Duration, nSeries int) {
	t.Helper()
	series := scrapes(t, sc.fires, phase, sc.end, "a")
	if sc.quiet != nil {
		maps.Copy(series, scrapes(t, sc.quiet, phase, sc.end, "b"))
	}
	type test struct {
		Name        string              `yaml:"name"`
		Interval    string              `yaml:"interval"`
		InputSeries []map[string]string `yaml:"input_series"`
		AlertTests  []map[string]any    `yaml:"alert_rule_test"`
	}
	tc := test{Name: sc.name, Interval: grid.String()}
	for _, k := range slices.Sorted(maps.Keys(series)) {
		tc.InputSeries = append(tc.InputSeries, map[string]string{"series": k, "values": encode(series[k], sc.end)})
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
		return nil, nil, len(series)
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
	return fires, quiet, len(series)
}

// bareRules writes the project's rules without annotations, so the generated tests
// compare labels only.
func bareRules(t *testing.T, dir string) []string {
	t.Helper()
	raw, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	var alerts []string
	for _, g := range doc["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			delete(r.(map[string]any), "annotations")
			alerts = append(alerts, r.(map[string]any)["alert"].(string))
		}
	}
	out, err := yaml.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yml"), out, 0o600))
	return alerts
}

// TestAlertsFireOnOTelSeries measures when each of the project's alerts fires on
// series scraped from OpenTelemetry's Prometheus exporter, at every scrape phase, and
// checks it against the documented window.
func TestAlertsFireOnOTelSeries(t *testing.T) {
	t.Parallel()
	promtool := needPromtool(t)
	dir := t.TempDir()
	alerts := bareRules(t, dir)
	covered := map[string]bool{}
	for _, sc := range otelScenarios {
		covered[sc.alert] = true
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			for _, phase := range phases {
				fires, quiet, n := fireTimes(t, promtool, dir, sc, phase)
				require.Empty(t, quiet, "phase %s: a quiet series fired at these evaluations", phase)
				require.NotEmpty(t, fires, "phase %s: the alert never fired", phase)
				first, last := slices.Min(fires), slices.Max(fires)
				t.Logf("phase %5s: %d series; fires from %s to %s (documented first firing: %s to %s)", phase, n, first, last, sc.firesFrom, sc.firesBy)
				require.GreaterOrEqual(t, first, sc.firesFrom, "phase %s: fired too early", phase)
				require.LessOrEqual(t, first, sc.firesBy, "phase %s: fired too late", phase)
				require.Len(t, fires, int((last-first)/evalEvery)+1, "phase %s: firing has gaps: %v", phase, fires)
				if sc.stopsBy > 0 {
					require.Less(t, last, sc.stopsBy, "phase %s: still firing at %s", phase, last)
				} else {
					require.Equal(t, sc.end, last, "phase %s: stopped firing at %s", phase, last)
				}
			}
		})
	}
	for _, a := range alerts {
		require.True(t, covered[a], "%s has no scenario on the OpenTelemetry path", a)
	}
	documented := documentedWindows(t)
	for _, sc := range otelScenarios {
		w, ok := documented[sc.alert]
		require.True(t, ok, "%s is not in the alert table", sc.alert)
		require.Equal(t, w, [2]time.Duration{sc.firesFrom - sc.event, sc.firesBy - sc.event},
			"%s: the scenario's window is not the documented one", sc.name)
	}
}

var alertRow = regexp.MustCompile("(?m)^\\| `(Agentbreaker\\w+)` \\|[^|]*\\| \\+(\\w+) to \\+(\\w+) [^|]*\\|")

// documentedWindows reads the alert table of docs/operations.md: each alert's first
// firing, from the event it is about.
func documentedWindows(t *testing.T) map[string][2]time.Duration {
	t.Helper()
	raw, err := os.ReadFile("../../docs/operations.md")
	require.NoError(t, err)
	out := map[string][2]time.Duration{}
	for _, m := range alertRow.FindAllStringSubmatch(string(raw), -1) {
		from, err := time.ParseDuration(m[2])
		require.NoError(t, err)
		by, err := time.ParseDuration(m[3])
		require.NoError(t, err)
		out[m[1]] = [2]time.Duration{from, by}
	}
	require.NotEmpty(t, out)
	return out
}

// needPromtool finds promtool, or skips (fails under CI=true, where CI installs
// Debian's prometheus package).
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
