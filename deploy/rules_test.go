package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const (
	rulesFile     = "prometheus/agentbreaker.rules.yml"
	rulesTestFile = "prometheus/agentbreaker.rules.test.yml"
)

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type ruleTestFile struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name        string `yaml:"name"`
		InputSeries []struct {
			Series string `yaml:"series"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func loadYAML[T any](t *testing.T, path string) T {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var v T
	require.NoError(t, yaml.Unmarshal(raw, &v), path)
	return v
}

// issueAlerts are the alerts the operations issue asks for; the rules may hold more.
var issueAlerts = []string{
	"AgentbreakerModelFailover",                // model failover (any, loud)
	"AgentbreakerFallbackServingSustained",     // sustained fallback serving
	"AgentbreakerBreakerOpenTooLong",           // breaker open longer than a threshold (page)
	"AgentbreakerBreakerFlapping",              // too many transitions in a window
	"AgentbreakerBulkheadRejectingWhileClosed", // bulkhead rejecting while its breaker is closed
	"AgentbreakerProbeSuccessLow",              // probe success rate low
	"AgentbreakerJournalIntentsUnreconciled",   // journal intents unreconciled for too long
	"AgentbreakerFleetLocal",                   // issue 16: a replica's breakers decide without the fleet
	"AgentbreakerSheddingSustained",            // issue 25: a throttle shedding a quarter of the calls for 10 minutes
	"AgentbreakerAdaptiveLimitAtFloor",         // issue 34: an adaptive concurrency limit at its floor for 10 minutes
}

func TestRulesUseExportedMetrics(t *testing.T) {
	t.Parallel()
	exported := seriesNames(exportedFamilies(t))
	rules := loadYAML[ruleFile](t, rulesFile)
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "group %s holds only alerts", g.Name)
			alerts = append(alerts, r.Alert)
			require.Contains(t, []string{"page", "warning"}, r.Labels["severity"], "%s has a severity", r.Alert)
			require.NotEmpty(t, r.Annotations["summary"], "%s has a summary", r.Alert)
			names := metricNames(r.Expr)
			require.NotEmpty(t, names, "%s selects a metric", r.Alert)
			for _, n := range names {
				require.Contains(t, exported, n, "%s uses %q, which the telemetry package does not export", r.Alert, n)
			}
		}
	}
	require.Subset(t, alerts, issueAlerts)
	require.Equal(t, "page", severityOf(rules, "AgentbreakerBreakerOpenTooLong"))
}

func severityOf(f ruleFile, alert string) string {
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == alert {
				return r.Labels["severity"]
			}
		}
	}
	return ""
}

var caseLabel = regexp.MustCompile(`\bcase="(fires|quiet)"`)

// TestEveryAlertIsTestedBothWays checks the shape of the promtool tests: each alert has
// a group with a series that must fire it (exp_alerts lists it with case="fires") and a
// series that must not (case="quiet", never in exp_alerts). promtool then checks the
// exact set of firing alerts, so a quiet series that fired would fail.
func TestEveryAlertIsTestedBothWays(t *testing.T) {
	t.Parallel()
	rules := loadYAML[ruleFile](t, rulesFile)
	tests := loadYAML[ruleTestFile](t, rulesTestFile)
	require.Equal(t, []string{"agentbreaker.rules.yml"}, tests.RuleFiles)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			fires, quiet := false, false
			for _, tc := range tests.Tests {
				tested := false
				for _, art := range tc.AlertRuleTest {
					if art.Alertname != r.Alert {
						continue
					}
					tested = true
					for _, exp := range art.ExpAlerts {
						require.NotEqual(t, "quiet", exp.ExpLabels["case"], "%s: a quiet series is expected to fire in %q", r.Alert, tc.Name)
						fires = fires || exp.ExpLabels["case"] == "fires"
					}
				}
				if !tested {
					continue
				}
				for _, s := range tc.InputSeries {
					if m := caseLabel.FindStringSubmatch(s.Series); m != nil && m[1] == "quiet" {
						quiet = true
					}
				}
			}
			require.True(t, fires, "%s has no test series that fires it", r.Alert)
			require.True(t, quiet, "%s has no test series that must not fire it", r.Alert)
		}
	}
}

// TestPromtool runs promtool on the rules and their unit tests. Without promtool the
// test skips, except under CI=true, where it fails: CI installs Debian's prometheus
// package, which ships promtool.
func TestPromtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool is not on PATH (CI=true): install it with apt-get install -y prometheus: %v", err)
		}
		t.Skipf("promtool is not on PATH; install Debian's prometheus package to run the rule tests: %v", err)
	}
	for _, args := range [][]string{
		{"check", "rules", rulesFile},
		{"test", "rules", rulesTestFile},
	} {
		cmd := exec.CommandContext(t.Context(), promtool, args...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool %v:\n%s", args, out)
		require.Contains(t, string(out), "SUCCESS", "promtool %v:\n%s", args, out)
	}
}
