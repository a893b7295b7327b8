package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

// fileKeys lists every key of a scenario file: the top-level ones, and the policy's as
// "policy.<key>", read from the struct tags so that a field added later is listed.
func fileKeys() []string {
	var keys []string
	st := reflect.TypeFor[Scenario]()
	for i := range st.NumField() {
		key, _, _ := strings.Cut(st.Field(i).Tag.Get("yaml"), ",")
		if key == "policy" {
			pt := reflect.TypeFor[depfile.Policy]()
			for j := range pt.NumField() {
				pk, _, _ := strings.Cut(pt.Field(j).Tag.Get("yaml"), ",")
				keys = append(keys, "policy."+pk)
			}
			continue
		}
		keys = append(keys, key)
	}
	return keys
}

// quick is the incident every key is changed against: short, so that about forty runs
// stay quick under the race detector.
var quick = map[string]string{"duration": "4m", "outage_start": "1m", "outage_end": "3m", "turn_rate": "0.5", "users": "15"}

// scenarioYAML writes the keys (with "policy." ones under policy:) as a scenario file.
func scenarioYAML(kv ...map[string]string) string {
	all := map[string]string{}
	for _, m := range kv {
		for k, v := range m {
			all[k] = v
		}
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b, pol strings.Builder
	for _, k := range keys {
		if p, ok := strings.CutPrefix(k, "policy."); ok {
			fmt.Fprintf(&pol, "  %s: %s\n", p, all[k])
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", k, all[k])
	}
	if pol.Len() > 0 {
		b.WriteString("policy:\n" + pol.String())
	}
	return b.String()
}

// TestEveryKeyChangesTheRun changes each key of a scenario file, one at a time, and
// checks that the run changes: what the strategies did and the policy their breakers
// ran, not the scenario echoed back. A key without an entry here fails the test, so a
// field added to Scenario or depfile.Policy must be shown to take effect.
func TestEveryKeyChangesTheRun(t *testing.T) {
	type change struct {
		base, changed map[string]string
		// label: the key only names something, so the timeline's text is compared.
		label bool
	}
	errMode := map[string]string{"outage_mode": "error"}
	timeWindow := map[string]string{"policy.window_calls": "off"}
	tests := map[string]change{
		"seed":                      {changed: map[string]string{"seed": "2"}},
		"duration":                  {changed: map[string]string{"duration": "5m"}},
		"users":                     {changed: map[string]string{"users": "40"}},
		"turn_rate":                 {changed: map[string]string{"turn_rate": "1"}},
		"dependency":                {changed: map[string]string{"dependency": "crm"}, label: true},
		"latency":                   {changed: map[string]string{"latency": "1s"}},
		"error_rate":                {changed: map[string]string{"error_rate": "0.2"}},
		"outage_start":              {changed: map[string]string{"outage_start": "90s"}},
		"outage_end":                {changed: map[string]string{"outage_end": "150s"}},
		"outage_error_rate":         {changed: map[string]string{"outage_error_rate": "0.6"}},
		"outage_mode":               {changed: errMode},
		"error_latency":             {changed: map[string]string{"error_latency": "2s"}},
		"retry_after":               {base: errMode, changed: map[string]string{"retry_after": "60s"}},
		"model_latency":             {changed: map[string]string{"model_latency": "3s"}},
		"sub_agents":                {changed: map[string]string{"sub_agents": "4"}},
		"client_attempts":           {changed: map[string]string{"client_attempts": "1"}},
		"client_backoff":            {changed: map[string]string{"client_backoff": "2s"}},
		"reissues":                  {changed: map[string]string{"reissues": "0"}},
		"reissue_after_error":       {changed: map[string]string{"reissue_after_error": "0.2"}},
		"reissue_after_unavailable": {changed: map[string]string{"reissue_after_unavailable": "1"}},
		"tool_timeout":              {changed: map[string]string{"tool_timeout": "2s"}},
		"turn_timeout":              {changed: map[string]string{"turn_timeout": "8s"}},
		"bulkhead":                  {changed: map[string]string{"bulkhead": "2"}},
		"strategies":                {changed: map[string]string{"strategies": "[naive]"}},

		"policy.failure_rate_threshold":   {base: timeWindow, changed: map[string]string{"policy.failure_rate_threshold": "0.9"}},
		"policy.minimum_calls":            {base: timeWindow, changed: map[string]string{"policy.minimum_calls": "5"}},
		"policy.window_calls":             {changed: map[string]string{"policy.window_calls": "50"}},
		"policy.window":                   {changed: map[string]string{"policy.window": "10s"}},
		"policy.buckets":                  {base: map[string]string{"policy.window": "20s"}, changed: map[string]string{"policy.buckets": "2"}},
		"policy.slow_call_threshold":      {changed: map[string]string{"policy.slow_call_threshold": "250ms"}},
		"policy.slow_call_rate_threshold": {base: map[string]string{"policy.slow_call_threshold": "250ms"}, changed: map[string]string{"policy.slow_call_rate_threshold": "0.9"}},
		"policy.cooldown":                 {changed: map[string]string{"policy.cooldown": "45s"}},
		"policy.cooldown_multiplier":      {changed: map[string]string{"policy.cooldown_multiplier": "2"}},
		"policy.max_cooldown":             {base: map[string]string{"policy.cooldown_multiplier": "3"}, changed: map[string]string{"policy.max_cooldown": "40s"}},
		"policy.jitter":                   {changed: map[string]string{"policy.jitter": "-1"}},
		"policy.half_open_probes":         {changed: map[string]string{"policy.half_open_probes": "3"}},
		"policy.probe_lease":              {changed: map[string]string{"policy.probe_lease": "1s"}},
		"policy.max_retry_after":          {base: map[string]string{"outage_mode": "error", "retry_after": "2m"}, changed: map[string]string{"policy.max_retry_after": "10s"}},
		"policy.version":                  {changed: map[string]string{"policy.version": "v2"}},
	}
	run := func(t *testing.T, yaml string, label bool) []byte {
		t.Helper()
		s, err := ParseScenario([]byte(yaml))
		if err != nil {
			t.Fatalf("%s\n%v", yaml, err)
		}
		r := mustRun(t, s)
		if label {
			var b bytes.Buffer
			if err := r.WriteTimeline(&b); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}
		b, err := json.Marshal(r.Strategies) // what ran, without the scenario echoed back
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, key := range fileKeys() {
		t.Run(key, func(t *testing.T) {
			if key == "policy.shadow" {
				// Refused, never ignored: a scenario runs policies that act.
				_, err := ParseScenario([]byte(scenarioYAML(quick, map[string]string{key: "true"})))
				if err == nil || !strings.Contains(err.Error(), "policy.shadow") {
					t.Fatalf("a scenario with policy.shadow: true gave %v, want an error naming policy.shadow", err)
				}
				return
			}
			tt, ok := tests[key]
			if !ok {
				t.Fatalf("no change listed for the key %s: add one that changes the run, or the key takes no effect", key)
			}
			if _, ok := tt.changed[key]; !ok {
				t.Fatalf("the change of %s does not set it", key)
			}
			before := run(t, scenarioYAML(quick, tt.base), tt.label)
			after := run(t, scenarioYAML(quick, tt.base, tt.changed), tt.label)
			if bytes.Equal(before, after) {
				t.Errorf("%s: the run is the same with %v over %v", key, tt.changed, tt.base)
			}
		})
	}
	for key := range tests {
		if !slices.Contains(fileKeys(), key) {
			t.Errorf("the table lists %s, which is no key of a scenario file", key)
		}
	}
}

// TestIgnoredPolicyKeysAreErrors: a policy key the breaker would ignore is refused with
// the key and the reason, never accepted and dropped.
func TestIgnoredPolicyKeysAreErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       string
	}{
		{"window with a count window", "policy:\n  window_calls: 20\n  window: 5m\n", "policy.window = 5m"},
		{"buckets with a count window", "policy:\n  window_calls: 20\n  buckets: 4\n", "policy.buckets = 4"},
		{"gate above the count window", "policy:\n  minimum_calls: 50\n", "policy.minimum_calls = 50"},
		{"slow rate without slow calls", "policy:\n  slow_call_rate_threshold: 0.8\n", "policy.slow_call_rate_threshold = 0.8"},
		{"cap of a fixed cooldown", "policy:\n  max_cooldown: 2m\n", "policy.max_cooldown = 2m"},
		{"cap of no stated delay", "policy:\n  max_retry_after: 1m\n", "policy.max_retry_after = 1m"},
		{"stated delay of a hang", "retry_after: 30s\n", "retry_after = 30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScenario([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// TestWindowDescribedOnce: the header, the JSON and DescribeWindow say the window the
// breaker ran in the same words, for a count window and a time window.
func TestWindowDescribedOnce(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"", "a count window of the last 20 calls"},
		{"policy:\n  window: 5m\n", "a time window of the last 5m"},
		{"policy:\n  window_calls: off\n", "a time window of the last 1m"},
	} {
		s, err := ParseScenario([]byte(scenarioYAML(quick) + tt.yaml))
		if err != nil {
			t.Fatal(err)
		}
		s.Strategies = []string{StrategyPolicy}
		r := mustRun(t, s)
		sr := r.Strategies[0]
		if !strings.Contains(sr.Description, tt.want) || !strings.Contains(sr.Policy.Description, tt.want) {
			t.Errorf("%q: description %q, policy %q: want %q", tt.yaml, sr.Description, sr.Policy.Description, tt.want)
		}
		if got := DescribeWindow(mustPolicy(t, s)); got != tt.want {
			t.Errorf("DescribeWindow = %q, want %q", got, tt.want)
		}
	}
}
