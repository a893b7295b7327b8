package probe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model/gemini"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/internal/syncbuf"
	"github.com/agentbreaker/agentbreaker/modelfailover"
	"github.com/agentbreaker/agentbreaker/probe"
)

// probeKind builds one kind of health check whose next answers the test sets: a 4xx
// status, or healthy. sent counts what reached the dependency (at the server, for the
// kinds that have one).
type probeKind struct {
	name  string
	build func(t *testing.T) (check probe.Func, classify func(context.Context, error) classify.Classification, answer func(status int), sent func() int64)
}

func probeKinds() []probeKind {
	return []probeKind{
		{name: "probe.Func returning classify.StatusError", build: func(t *testing.T) (probe.Func, func(context.Context, error) classify.Classification, func(int), func() int64) {
			var status atomic.Int64
			var n atomic.Int64
			return func(context.Context) error {
				n.Add(1)
				if s := int(status.Load()); s != 0 {
					return classify.StatusError(s, 0, "health check answered "+fmt.Sprint(s))
				}
				return nil
			}, nil, func(s int) { status.Store(int64(s)) }, n.Load
		}},
		{name: "HTTP GET", build: func(t *testing.T) (probe.Func, func(context.Context, error) classify.Classification, func(int), func() int64) {
			srv := breakertest.NewServer(t)
			check, err := probe.HTTPGet(probe.HTTPConfig{URL: srv.URL + "/health"})
			require.NoError(t, err)
			return check, nil, func(s int) {
				if s == 0 {
					srv.Set(breakertest.OK("ok"))
				} else {
					srv.Set(breakertest.Status(s))
				}
			}, srv.Requests
		}},
		{name: "model probe (modelfailover.ProbeFunc over the genai client)", build: func(t *testing.T) (probe.Func, func(context.Context, error) classify.Classification, func(int), func() int64) {
			srv := geminifake.Start(t, geminifake.Config{Name: "us-central1"})
			llm, err := gemini.NewModel(t.Context(), "gemini-2.5-flash", srv.ClientConfig(nil))
			require.NoError(t, err)
			return modelfailover.ProbeFunc(llm, "gemini-2.5-flash", "", nil), nil, func(s int) {
					if s == 0 {
						srv.Recover()
					} else {
						require.NoError(t, srv.Fail(geminifake.Failure{Code: s}))
					}
				}, func() int64 {
					return int64(srv.RequestsFor("gemini-2.5-flash"))
				}
		}},
		{name: "user-supplied kind: a ClassifiedError its own Classify reads as healthy", build: func(t *testing.T) (probe.Func, func(context.Context, error) classify.Classification, func(int), func() int64) {
			var status atomic.Int64
			var n atomic.Int64
			check := func(context.Context) error {
				n.Add(1)
				if s := int(status.Load()); s != 0 {
					c := classify.ForClass(classify.ClassNone) // the check's own claim: healthy
					c.StatusCode = s
					return &probe.ClassifiedError{Classification: c, Err: fmt.Errorf("grpc health: status %d", s)}
				}
				return nil
			}
			cls := func(_ context.Context, err error) classify.Classification {
				if ce, ok := errors.AsType[*probe.ClassifiedError](err); ok {
					return ce.Classification
				}
				return classify.ForClass(classify.ClassNone) // a classifier that calls everything healthy
			}
			return check, cls, func(s int) { status.Store(int64(s)) }, n.Load
		}},
	}
}

// TestAProbes4xxNeverClosesTheBreaker (issue 32a): whatever the kind of probe, a 401,
// 403, 404 or 429 from it is a failed probe: the breaker stays open, user calls are
// still answered locally, and the probe's one log record names the problem. The
// next healthy probe closes the breaker. Each probe reached the dependency once.
func TestAProbes4xxNeverClosesTheBreaker(t *testing.T) {
	statuses := []struct {
		code    int
		problem string
	}{{401, "neutral"}, {403, "neutral"}, {404, "neutral"}, {408, "request_timeout"}, {429, "rate_limited"}}
	for _, kind := range probeKinds() {
		for _, st := range statuses {
			t.Run(fmt.Sprintf("%s/%d", kind.name, st.code), func(t *testing.T) {
				check, cls, answer, sent := kind.build(t)
				answer(st.code)
				r := newRig(t, breaker.Policy{}, check, func(c *probe.Config) {
					c.Checks[0].Classify = cls
				})
				r.trip(t)
				r.clk.Advance(30 * time.Second)
				next := r.p.ProbeDue(t.Context())
				require.Equal(t, int64(1), sent(), "one probe reached the dependency")
				res := r.last()
				require.False(t, res.Healthy, "%+v", res)
				require.Equal(t, st.problem, res.Problem, "%+v", res)
				require.Equal(t, breaker.Open, r.b.State(), "a %d from the probe is not a healthy answer", st.code)
				_, err := r.b.Allow()
				var oe *breaker.OpenError
				require.ErrorAs(t, err, &oe, "user calls are still answered locally")
				logs := r.log.String()
				require.Equal(t, 1, strings.Count(logs, "health probe failed"), logs)
				require.Contains(t, logs, "problem="+st.problem, "the one record names the problem")

				answer(0)
				r.clk.Set(next)
				r.p.ProbeDue(t.Context())
				require.Equal(t, int64(2), sent())
				require.Equal(t, breaker.Closed, r.b.State(), "%+v", r.last())
				require.True(t, r.last().Healthy)
			})
		}
	}
}

// TestTheLogsBulletListsWhatTheRecordsCarry (issue 32a): docs/probes.md's Logs
// bullet names the message, every attribute of a failed probe's record and every
// problem a record can carry; each is checked against records a prober wrote.
func TestTheLogsBulletListsWhatTheRecordsCarry(t *testing.T) {
	page, err := os.ReadFile("../docs/probes.md")
	require.NoError(t, err)
	bullet := regexp.MustCompile(`(?s)- \*\*Logs\*\*:(.*?)\n- \*\*`).FindSubmatch(page)
	require.NotNil(t, bullet, "docs/probes.md has a Logs bullet")
	text := strings.Join(strings.Fields(string(bullet[1])), " ")
	var named []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(text, -1) {
		named = append(named, m[1])
	}

	// Records of failed probes of every problem the bullet promises.
	checks := map[string]probe.Func{
		"":                func(context.Context) error { return errors.New("connection refused") },
		"neutral":         func(context.Context) error { return classify.StatusError(401, 0, "bad key") },
		"rate_limited":    func(context.Context) error { return classify.StatusError(429, 0, "slow down") },
		"request_timeout": func(context.Context) error { return classify.StatusError(408, 0, "too slow") },
		"panic":           func(context.Context) error { panic("boom") },
	}
	keys := map[string]bool{}
	problems := map[string]bool{}
	var msgs []string
	collect := func(t *testing.T, check probe.Func, fire bool) {
		buf := &syncbuf.Buffer{}
		var r *rig
		if fire {
			inner := check
			check = func(ctx context.Context) error {
				go r.fireOnceArmed()
				return inner(ctx)
			}
		}
		r = newRig(t, breaker.Policy{}, check, func(c *probe.Config) {
			c.Logger = slog.New(slog.NewJSONHandler(buf, nil))
		})
		r.trip(t)
		r.clk.Advance(30 * time.Second)
		r.p.ProbeDue(t.Context())
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		require.Len(t, lines, 1, "one record per failed probe")
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
		for k, v := range rec {
			switch k {
			case "time", "level":
			case "msg":
				msgs = append(msgs, v.(string))
			case "problem":
				problems[v.(string)] = true
				keys[k] = true
			default:
				keys[k] = true
			}
		}
	}
	for want, check := range checks {
		collect(t, check, false)
		if want != "" {
			require.True(t, problems[want], "a record with problem=%s", want)
		}
	}
	// A check that hangs past its timeout, and one still running at the next probe.
	release := make(chan struct{})
	defer close(release)
	collect(t, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, true)
	require.True(t, problems["timeout"])
	{
		buf := &syncbuf.Buffer{}
		var r *rig
		r = newRig(t, breaker.Policy{}, func(context.Context) error {
			go r.fireOnceArmed()
			<-release
			return nil
		}, func(c *probe.Config) { c.Logger = slog.New(slog.NewJSONHandler(buf, nil)) })
		r.trip(t)
		r.clk.Advance(30 * time.Second)
		next := r.p.ProbeDue(t.Context())
		r.clk.Set(next)
		r.p.ProbeDue(t.Context())
		require.Equal(t, "still_running", r.last().Problem)
		require.Contains(t, buf.String(), `"problem":"still_running"`)
		problems["still_running"] = true
	}

	for _, m := range slices.Compact(slices.Sorted(slices.Values(msgs))) {
		require.Contains(t, named, m, "the bullet names the record's message")
	}
	for k := range keys {
		require.Contains(t, named, k, "the bullet names the attribute %q the records carry", k)
	}
	for p := range problems {
		require.Contains(t, named, p, "the bullet names the problem %q", p)
	}
	// And the bullet promises nothing the records do not carry.
	for _, n := range named {
		if n == msgs[0] {
			continue
		}
		require.True(t, keys[n] || problems[n], "the bullet names %q, which no record carries", n)
	}
}
