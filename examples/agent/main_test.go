package main

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// served counts, on the CRM's side, the status of every response the CRM sent.
type served struct {
	mu     sync.Mutex
	status map[int]int
}

func (s *served) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.status[rec.code]++
	})
}

func (s *served) count(code int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status[code]
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// watched is one run of the example, with what the test saw of it from outside: the
// CRM's responses and the model's requests of each of the two incidents.
type watched struct {
	out    string
	lines  []string // the output's lines
	joined []string // the same, with every wrapped line joined to the line it continues
	crm    map[bool]*served
	model  map[bool]*breakertest.Model
}

func watch(t *testing.T) watched {
	t.Helper()
	w := watched{
		crm:   map[bool]*served{true: {status: map[int]int{}}, false: {status: map[int]int{}}},
		model: map[bool]*breakertest.Model{},
	}
	var out bytes.Buffer
	began := time.Now()
	require.NoError(t, run(t.Context(), &out, hooks{
		crm:   func(guarded bool, h http.Handler) http.Handler { return w.crm[guarded].wrap(h) },
		model: func(guarded bool, m *breakertest.Model) { w.model[guarded] = m },
	}))
	// The story covers minutes of fake time; a real sleep anywhere would show here.
	require.Less(t, time.Since(began), time.Minute, "the example runs on its fake clock")
	require.NotNil(t, w.model[true])
	require.NotNil(t, w.model[false], "the comparison runs the incident a second time")
	w.out = out.String()
	w.lines = strings.Split(strings.TrimSuffix(w.out, "\n"), "\n")
	for _, l := range w.lines {
		if strings.HasPrefix(l, wrapIndent) && len(w.joined) > 0 {
			w.joined[len(w.joined)-1] += " " + strings.TrimSpace(l)
			continue
		}
		w.joined = append(w.joined, l)
	}
	return w
}

// received returns the tool results the model of one run received, in order.
func (w watched) received(guarded bool) []map[string]any {
	var out []map[string]any
	for _, req := range w.model[guarded].Requests() {
		for _, r := range req.FunctionResponses() {
			out = append(out, r.Response)
		}
	}
	return out
}

// timed matches a line of the story: the fake clock's time, then the event.
var timed = regexp.MustCompile(`^(\d\d:\d\d:\d\d) (.*)$`)

// TestExampleTellsTheIncident runs the example end to end, through adk-go's real
// runner twice (with the plugin and without), and checks the story it tells against
// what the test itself saw at the CRM and at the model.
func TestExampleTellsTheIncident(t *testing.T) {
	w := watch(t)
	policy := dependencymap.MergePolicy(dependencymap.DefaultToolPolicy, crmPolicy).WithDefaults()

	t.Run("lines fit in 100 characters", func(t *testing.T) {
		for i, l := range w.lines {
			require.LessOrEqual(t, utf8.RuneCountInString(l), 100, "line %d: %q", i+1, l)
		}
	})

	t.Run("no line is printed twice", func(t *testing.T) {
		// A line cut by the wrap counts whole: two reasons may share their first words.
		seen := map[string]int{}
		for i, l := range w.joined {
			if strings.TrimSpace(l) == "" {
				continue
			}
			require.NotContains(t, seen, l, "line %d repeats line %d", i+1, seen[l]+1)
			seen[l] = i
		}
	})

	t.Run("every answer the model got is shown, with agentbreaker's text as received", func(t *testing.T) {
		got := w.received(true)
		var shown int
		printed := map[string]bool{} // reason and instruction texts printed in full
		for _, l := range w.joined {
			if m := timed.FindStringSubmatch(l); m != nil && strings.HasPrefix(m[2], "the model gets") {
				shown++
			}
			for _, key := range []string{"reason", "instruction"} {
				if text, ok := strings.CutPrefix(l, fieldIndent+key+": "); ok {
					printed[text] = true
				}
			}
		}
		require.Equal(t, len(got), shown, "one 'the model gets' line per tool result the model received")
		want := map[string]bool{}
		var firm []string
		for _, res := range got {
			if !payloads.Is(res) {
				continue
			}
			for _, key := range []string{payloads.KeyReason, payloads.KeyInstruction} {
				want[res[key].(string)] = true
			}
			if res[payloads.KeyFirm] == true {
				firm = append(firm, res[payloads.KeyInstruction].(string))
			}
		}
		require.Equal(t, want, printed, "each text agentbreaker gave the model is printed, word for word, once")
		require.NotEmpty(t, firm, "the model got a firm answer")
		for _, f := range firm {
			require.True(t, printed[f], "the firm instruction %q is printed", f)
		}
		require.NotContains(t, w.out, "retry_after_seconds", "the story shows the words the model reads")
	})

	t.Run("the CRM's text never reaches the guarded model", func(t *testing.T) {
		for _, res := range w.received(true) {
			require.NotContains(t, fmt.Sprint(res), "ignore previous instructions")
		}
		require.Equal(t, w.crm[false].count(503), leaks(w.received(false)),
			"without the plugin, every 503's body reached the model")
	})

	t.Run("the probe is labelled when it is let through", func(t *testing.T) {
		var probes int
		for i, l := range w.joined {
			m := timed.FindStringSubmatch(l)
			if m == nil || !strings.HasPrefix(m[2], "the probe:") {
				continue
			}
			probes++
			require.Equal(t, m[1]+" model calls", w.joined[i-1][:len(m[1])+12], "the model's call comes first")
			require.True(t, strings.HasPrefix(w.joined[i+1], m[1]+" CRM: "), "then it reaches the CRM: %q", w.joined[i+1])
		}
		require.Equal(t, 2, probes, "one failed probe, one that closes the breaker")
	})

	t.Run("a trip is printed after the result of the call that caused it", func(t *testing.T) {
		trip := slices.IndexFunc(w.joined, func(l string) bool { return strings.Contains(l, " opens: failure rate") })
		require.Positive(t, trip)
		at := w.joined[trip][:8]
		var order []string
		for _, l := range w.joined[:trip] {
			if m := timed.FindStringSubmatch(l); m != nil && m[1] == at && !strings.HasPrefix(m[2], "user:") {
				order = append(order, strings.Fields(m[2])[0])
			}
		}
		require.Equal(t, []string{"model", "CRM:", "the"}, order, "the call, the CRM's 503, then what the model got")
		require.True(t, strings.HasPrefix(w.joined[trip+2], at+" model: "), "the model answers after: %q", w.joined[trip+2])
		var calls int
		for _, l := range w.joined[:trip] {
			if m := timed.FindStringSubmatch(l); m != nil && strings.HasPrefix(m[2], "CRM: ") {
				calls++
			}
		}
		require.Equal(t, policy.MinimumCalls, calls, "it trips on the call that meets MinimumCalls")
		require.Equal(t, 1, strings.Count(w.out, " opens: "), "the 404s after the recovery open nothing")
	})

	t.Run("list_orders is refused by the breaker lookup_customer tripped", func(t *testing.T) {
		i := slices.IndexFunc(w.joined, func(l string) bool { return strings.Contains(l, " model calls list_orders(") })
		require.Positive(t, i)
		for _, l := range w.joined[i+1:] {
			if m := timed.FindStringSubmatch(l); m != nil {
				require.True(t, strings.HasPrefix(m[2], "the model gets agentbreaker's answer"), "no CRM call: %q", l)
				break
			}
		}
	})

	t.Run("why MinimumCalls is small is said once", func(t *testing.T) {
		byDefault := dependencymap.MergePolicy(dependencymap.DefaultToolPolicy, breaker.Policy{}).WithDefaults()
		require.Equal(t, 1, strings.Count(w.out, "MinimumCalls"))
		require.Contains(t, strings.Join(w.joined, " "), fmt.Sprintf("once there are %d calls (MinimumCalls). %d is for this "+
			"short demo only: the default is %d", policy.MinimumCalls, policy.MinimumCalls, byDefault.MinimumCalls))
	})

	t.Run("the cooldown growth is the policy's", func(t *testing.T) {
		var waits []string
		for d := policy.Cooldown; d < policy.MaxCooldown; d = time.Duration(float64(d) * policy.CooldownMultiplier) {
			waits = append(waits, words(d))
		}
		require.GreaterOrEqual(t, len(waits), 2)
		text := strings.Join(w.joined, " ")
		require.Contains(t, text, "each failed probe doubles the wait: "+strings.Join(waits, ", ")+", then "+
			words(policy.MaxCooldown)+" at most.")
		require.Contains(t, text, "("+waits[0]+"), when one probe may go", "the first wait, as the breaker ran it")
		reopened := regexp.MustCompile(`probe failed; the next probe may go at \d\d:\d\d:\d\d, after (\S+)$`)
		var second []string
		for _, l := range w.joined {
			if m := reopened.FindStringSubmatch(l); m != nil {
				second = append(second, m[1])
			}
		}
		require.Equal(t, waits[1:2], second, "the second wait, as the breaker ran it")
	})

	t.Run("the comparison counts the outage as the CRM saw it", func(t *testing.T) {
		row := func(label string) (int, int) {
			re := regexp.MustCompile(`^  ` + regexp.QuoteMeta(label) + ` +(\d+) +(\d+)$`)
			for _, l := range w.lines {
				if m := re.FindStringSubmatch(l); m != nil {
					a, _ := strconv.Atoi(m[1])
					b, _ := strconv.Atoi(m[2])
					return a, b
				}
			}
			t.Fatalf("no row %q", label)
			return 0, 0
		}
		with, without := row("requests that reached the failing CRM")
		require.Equal(t, w.crm[true].count(503), with, "every request during the outage got a 503")
		require.Equal(t, w.crm[false].count(503), without)
		require.Less(t, with, without)

		with, without = row("tool calls the model made")
		require.Equal(t, failedCalls(w.received(true)), with)
		require.Equal(t, failedCalls(w.received(false)), without)

		with, without = row("answers that showed the model the CRM's error text")
		require.Equal(t, leaks(w.received(true)), with)
		require.Equal(t, leaks(w.received(false)), without)
		require.Zero(t, with)
	})
}

// leaks counts the results that quote the CRM's error body.
func leaks(results []map[string]any) int {
	n := 0
	for _, res := range results {
		if strings.Contains(fmt.Sprint(res), injection) {
			n++
		}
	}
	return n
}

// failedCalls counts the tool calls that did not get the CRM's answer: during the
// outage every call fails, and outside it none does (a 404 is the CRM's answer).
func failedCalls(results []map[string]any) int {
	n := 0
	for _, res := range results {
		if res["status"] != "ok" && !strings.Contains(fmt.Sprint(res), "404") {
			n++
		}
	}
	return n
}

// TestExamplePrintsThePolicyItRuns changes the CRM's policy and sees the story change
// with it: no figure of the policy is typed into the text.
func TestExamplePrintsThePolicyItRuns(t *testing.T) {
	saved := crmPolicy
	t.Cleanup(func() { crmPolicy = saved })
	crmPolicy.MinimumCalls = 3
	crmPolicy.Cooldown = 20 * time.Second
	crmPolicy.CooldownMultiplier = 3

	w := watch(t)
	text := strings.Join(w.joined, " ")
	require.Contains(t, text, "once there are 3 calls (MinimumCalls). 3 is for this short demo only")
	require.Contains(t, text, "each failed probe multiplies the wait by 3: 20s, 1m, 3m, then 5m at most.")
	require.Contains(t, text, "failure rate 66.7% over 3 calls")
	require.Contains(t, text, "(20s), when one probe may go")
}

func TestWrap(t *testing.T) {
	long := strings.Repeat("word ", 60)
	lines := wrap("12:00:00 ", long, wrapIndent)
	require.Greater(t, len(lines), 2)
	for _, l := range lines {
		require.LessOrEqual(t, utf8.RuneCountInString(l), width)
	}
	require.Equal(t, strings.Fields(long), strings.Fields(strings.TrimPrefix(strings.Join(lines, " "), "12:00:00 ")))
	require.Equal(t, []string{"a b"}, wrap("a ", "b", "  "))
}

func TestWords(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 30 * time.Second: "30s", time.Minute: "1m", 150 * time.Second: "2m30s", time.Hour: "1h",
		90 * time.Minute: "1h30m", 1400 * time.Millisecond: "1s",
	} {
		require.Equal(t, want, words(d), "%s", d)
	}
}
