package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
	"github.com/agentbreaker/agentbreaker/internal/testenv"
)

// TestMain fails the test if a server, the journal, the prober or a fake outlives run.
func TestMain(m *testing.M) { leakcheck.Main(m) }

// printed is what the program printed, read line by line while it runs.
type printed struct {
	mu      sync.Mutex
	all     strings.Builder
	serving chan struct{} // closed once it says it keeps serving
}

func readOutput(r io.Reader) *printed {
	p := &printed{serving: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			p.all.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if sc.Text() == "serving until interrupted" {
				close(p.serving)
			}
		}
	}()
	return p
}

func (p *printed) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.all.String()
}

var (
	metricsLine = regexp.MustCompile(`(?m)^  metrics:    (http://\S+/metrics)$`)
	adminLine   = regexp.MustCompile(`(?m)^  admin page: (http://\S+/admin/) \(token generated for this run: (\S+) `)
	statsLine   = regexp.MustCompile(`(?m)^  CRM counts: (http://\S+/stats)$`)
)

// started is a run of the program that keeps serving, and what it printed.
type started struct {
	out    *printed
	cancel context.CancelFunc
	done   chan error
}

// start runs the program with -serve and args, and returns once it says it keeps
// serving.
func start(t *testing.T, args ...string) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	s := &started{out: readOutput(pr), cancel: cancel, done: make(chan error, 1)}
	go func() {
		s.done <- run(ctx, append([]string{"-serve", "-addr", "127.0.0.1:0", "-data", t.TempDir(), "-log-level", "error"}, args...), pw)
		pw.Close()
	}()
	select {
	case <-s.out.serving:
	case err := <-s.done:
		t.Fatalf("run returned before serving: %v\n%s", err, s.out.String())
	}
	return s
}

// stop ends the run and requires that it returned no error.
func (s *started) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	require.NoError(t, <-s.done)
}

// TestProductionProgram runs the program as an operator does with no flags but
// -serve (offline: local CRM, Gemini and OpenAI-compatible endpoints), then, while it
// keeps serving, scrapes /metrics, loads the admin page with and without its token,
// and reads what reached the local CRM.
func TestProductionProgram(t *testing.T) {
	t.Setenv("REDIS_ADDR", "")               // fleet mode off
	t.Setenv("AGENTBREAKER_ADMIN_TOKEN", "") // a token generated for the run
	s := start(t)
	got := s.out.String()
	t.Log(got)
	require.Contains(t, got, "fleet mode: off (REDIS_ADDR is not set)")
	require.Contains(t, got, "[breaker crm: closed -> open: failure rate 100% over 3 calls ≥ 50%]")
	require.Contains(t, got, "crm_lookup -> agentbreaker.unavailable, status unavailable: Do not call this tool again now.",
		"the model was told, and the CRM was not called")
	require.Contains(t, got, "[breaker crm: half_open -> closed: health probe succeeded]")
	require.Contains(t, got, "[model failover: gemini-2.5-flash@gemini -> gpt-4.1-mini@openai (http_5xx)]")
	require.Contains(t, got, "crm_add_note -> agentbreaker.outcome_unknown")

	families := scrapeMetrics(t, metricsLine.FindStringSubmatch(got)[1])
	storyCounts(t, families)
	for name := range families {
		require.False(t, strings.HasPrefix(name, "agentbreaker_fleet_"), "%s: fleet mode is off", name)
	}
	m := adminLine.FindStringSubmatch(got)
	require.NotNil(t, m, "the admin page's address and token are printed")
	loadAdmin(t, m[1], m[2])
	crmCounts(t, statsLine.FindStringSubmatch(got)[1])
	s.stop(t)
}

// TestFleetModeWithRedis: with REDIS_ADDR set the breakers join a fleet (under an App
// of this test's own, so no other run's state is shared), /metrics has the fleet's
// families and the admin page shows each breaker's scope.
func TestFleetModeWithRedis(t *testing.T) {
	addr := testenv.RedisAddr(t)
	t.Setenv("REDIS_ADDR", addr)
	t.Setenv("AGENTBREAKER_ADMIN_TOKEN", "")
	s := start(t, "-fleet-app", "production-test-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	got := s.out.String()
	require.Contains(t, got, "fleet mode: on, through Redis at "+addr)
	families := scrapeMetrics(t, metricsLine.FindStringSubmatch(got)[1])
	for _, name := range []string{"agentbreaker_fleet_syncs_total", "agentbreaker_fleet_sync_failures_total",
		"agentbreaker_fleet_outages_total", "agentbreaker_fleet_redis_commands_total", "agentbreaker_fleet_local"} {
		require.Contains(t, families, name)
	}
	m := adminLine.FindStringSubmatch(got)
	req, err := http.NewRequest(http.MethodGet, m[1]+"api/state", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+m[2])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(body), `"scope":`)
	s.stop(t)
}

// wantFamilies are the families of every configured part: the dependency map and its
// probe, the plugin, the retrier and the tool timeouts, the journal and the model
// failover. Throttles and adaptive limits are not configured. (Probe results appear
// with the first probe: storyCounts checks the offline story's.)
var wantFamilies = []string{
	"agentbreaker_calls_total", "agentbreaker_call_duration_seconds", "agentbreaker_short_circuits_total",
	"agentbreaker_bulkhead_rejections_total", "agentbreaker_retry_budget_exhausted_total",
	"agentbreaker_tool_calls_abandoned", "agentbreaker_tool_calls_abandoned_total",
	"agentbreaker_breaker_state", "agentbreaker_breaker_open_duration_seconds", "agentbreaker_breaker_open_seconds_total",
	"agentbreaker_breaker_retry_after_seconds", "agentbreaker_breaker_window_calls", "agentbreaker_breaker_window_failed_calls",
	"agentbreaker_breaker_window_slow_calls", "agentbreaker_breaker_probes_in_flight", "agentbreaker_breaker_transitions_total",
	"agentbreaker_breaker_probes_total", "agentbreaker_breaker_cooldown_extensions_total",
	"agentbreaker_journal_pending_intents", "agentbreaker_journal_oldest_pending_age_seconds",
	"agentbreaker_model_failovers_total", "agentbreaker_model_fallback_calls_total", "agentbreaker_model_fallback_ratio",
	"agentbreaker_model_route_serving", "agentbreaker_start_time_seconds", "agentbreaker_telemetry_series_overflow_total",
}

func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	for _, name := range wantFamilies {
		require.Contains(t, families, name, "a family of a configured part is missing")
	}
	for name := range families {
		for _, absent := range []string{"agentbreaker_throttle_", "agentbreaker_adaptive_limit"} {
			require.False(t, strings.HasPrefix(name, absent), "%s: a part that is not configured exports nothing", name)
		}
	}
	return families
}

// storyCounts checks the counts the offline story leaves in the scrape.
func storyCounts(t *testing.T, families map[string]*dto.MetricFamily) {
	t.Helper()
	require.Equal(t, 1.0, value(families["agentbreaker_breaker_transitions_total"], map[string]string{"dependency": "crm", "from": "closed", "to": "open"}))
	require.Equal(t, 1.0, value(families["agentbreaker_breaker_probe_results_total"], map[string]string{"dependency": "crm", "source": "health_probe", "result": "succeeded"}))
	require.Equal(t, 1.0, value(families["agentbreaker_short_circuits_total"], map[string]string{"dependency": "crm", "tool": "crm_lookup"}))
	require.Equal(t, 1.0, value(families["agentbreaker_model_failovers_total"], map[string]string{"from": "gemini-2.5-flash@gemini", "to": "gpt-4.1-mini@openai"}))
	require.Equal(t, 1.0, value(families["agentbreaker_model_route_serving"], map[string]string{"model": "gpt-4.1-mini", "region": "openai"}))
}

// value sums the samples of f whose labels include want.
func value(f *dto.MetricFamily, want map[string]string) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if match {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

func loadAdmin(t *testing.T, base, token string) {
	t.Helper()
	get := func(path, token string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, page := get("", "")
	require.Equal(t, http.StatusOK, code, "the page shell needs no token")
	require.Contains(t, page, "<html")
	code, _ = get("api/state", "")
	require.Equal(t, http.StatusUnauthorized, code, "the state needs the token")
	code, _ = get("api/state", "not-the-token-but-long-enough")
	require.Equal(t, http.StatusUnauthorized, code)
	code, state := get("api/state", token)
	require.Equal(t, http.StatusOK, code)
	var doc struct {
		Breakers []struct {
			Name        string `json:"name"`
			State       string `json:"state"`
			Transitions []struct {
				To string `json:"to"`
			} `json:"transitions"`
		} `json:"breakers"`
		Routes            []json.RawMessage `json:"routes"`
		JournalConfigured bool              `json:"journal_configured"`
		HistoryConfigured bool              `json:"history_configured"`
	}
	require.NoError(t, json.Unmarshal([]byte(state), &doc))
	require.True(t, doc.JournalConfigured)
	require.True(t, doc.HistoryConfigured, "a History with no call of the program's")
	require.Len(t, doc.Routes, 2)
	states := map[string]string{}
	for _, b := range doc.Breakers {
		states[b.Name] = b.State
		if b.Name == "crm" {
			require.Len(t, b.Transitions, 3, "closed -> open -> half_open -> closed")
		}
	}
	require.Equal(t, map[string]string{"crm": "closed", "gemini-2.5-flash@gemini": "open", "gpt-4.1-mini@openai": "closed"}, states)
	code, _ = get("api/journal", token)
	require.Equal(t, http.StatusOK, code)
}

func crmCounts(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	var st crmStats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.Equal(t, 3, st.OutageLookups, "the breaker opened at the volume gate; the fourth lookup of the outage never reached the CRM")
	require.Equal(t, 5, st.Lookups, "two before the outage, three in it, none while open, one after")
	require.Equal(t, 1, st.Health, "one health probe closed the breaker")
	require.Equal(t, 2, st.Notes, "two notes sent; the model's re-issue of the one whose answer was lost was not")
	require.Len(t, st.NotesByKey, 2)
	for key, n := range st.NotesByKey {
		require.NotEmpty(t, key, "every note carries an idempotency key")
		require.Equal(t, 1, n, "no mutation was sent twice (key %s)", key)
	}
	require.Equal(t, 2, st.NotesApplied)
	require.Equal(t, 1, st.StatusLookups, "the journal asked the CRM once whether the lost note was stored")
}

// TestWiringFitsInFortyLines counts agentbreaker's wiring in wiring.go, by the rule its
// comment states, and keeps the number there true.
func TestWiringFitsInFortyLines(t *testing.T) {
	src, err := os.ReadFile("wiring.go")
	require.NoError(t, err)
	n, on := 0, false
	for _, line := range strings.Split(string(src), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "// wiring: begin":
			on = true
		case trimmed == "// wiring: end":
			on = false
		case strings.HasSuffix(trimmed, "// wiring: this line"):
			n++
		case on && trimmed != "" && !strings.HasPrefix(trimmed, "//"):
			n++
		}
	}
	require.LessOrEqual(t, n, 40)
	require.Contains(t, string(src), "TestWiringFitsInFortyLines counts them: "+strconv.Itoa(n)+".")
	for page, says := range map[string]string{
		"../../README.md":          "in " + strconv.Itoa(n) + " lines of wiring",
		"../../docs/operations.md": "Its agentbreaker wiring is " + strconv.Itoa(n) + "\nlines",
	} {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		require.Contains(t, string(text), says, "%s gives the count", page)
	}
}

// TestLiveNeedsTheCRM: -live uses real endpoints, and says in one line which it lacks.
func TestLiveNeedsTheCRM(t *testing.T) {
	t.Setenv("CRM_URL", "")
	var out strings.Builder
	err := run(t.Context(), []string{"-live", "-addr", "127.0.0.1:0", "-data", t.TempDir()}, &out)
	require.EqualError(t, err, "production: -live needs the CRM's base URL in CRM_URL")
}

// TestABadTokenStopsTheStart: an admin token the admin page refuses ends the start
// with the page's own error, and whatever was opened before it (the journal, the
// prober, the fakes) is closed again (TestMain's leak check).
func TestABadTokenStopsTheStart(t *testing.T) {
	t.Setenv("REDIS_ADDR", "")
	t.Setenv("AGENTBREAKER_ADMIN_TOKEN", "aaaaaaaaaaaaaaaaaaaa")
	var out strings.Builder
	err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-data", t.TempDir()}, &out)
	require.ErrorContains(t, err, "admin: ")
	require.ErrorContains(t, err, "Token")
	require.NotContains(t, err.Error(), "aaaaaaaaaaaaaaaaaaaa", "the token is not repeated")
}
