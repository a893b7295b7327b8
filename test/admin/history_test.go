package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
)

func event(name string, from, to breaker.State, cause breaker.Cause, at time.Time) breaker.Event {
	return breaker.Event{Breaker: name, From: from, To: to, Cause: cause, Reason: fmt.Sprintf("%s→%s", from, to), At: at}
}

// TestHistoryKeepsTheLastTransitionsNewestFirst checks the ring and the time the
// breaker stopped admitting calls: failed probes do not restart it, closing clears it.
func TestHistoryKeepsTheLastTransitionsNewestFirst(t *testing.T) {
	t.Parallel()
	h := admin.MustNewHistory(admin.HistoryConfig{PerBreaker: 3})
	t0 := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	h.Record(event("crm", breaker.Closed, breaker.Open, breaker.CauseFailureRate, t0))
	h.Record(event("crm", breaker.Open, breaker.HalfOpen, breaker.CauseCooldownElapsed, t0.Add(30*time.Second)))
	h.Record(event("crm", breaker.HalfOpen, breaker.Open, breaker.CauseProbeFailed, t0.Add(31*time.Second)))
	got, since := h.Recent("crm")
	require.Equal(t, t0, since)
	require.Len(t, got, 3)
	h.Record(event("crm", breaker.Open, breaker.HalfOpen, breaker.CauseCooldownElapsed, t0.Add(91*time.Second)))
	got, since = h.Recent("crm")
	require.Equal(t, t0, since, "a failed probe does not restart the time open")
	require.Equal(t, []string{"open→half_open", "half_open→open", "open→half_open"}, reasons(got), "the oldest is dropped, newest first")
	require.Equal(t, t0.Add(91*time.Second), got[0].At)

	h.Record(event("crm", breaker.HalfOpen, breaker.Closed, breaker.CauseProbeSucceeded, t0.Add(92*time.Second)))
	got, since = h.Recent("crm")
	require.True(t, since.IsZero())
	require.Equal(t, "probe_succeeded", got[0].Cause)

	h.Record(event("crm", breaker.Closed, breaker.ForcedOpen, breaker.CauseOperator, t0.Add(100*time.Second)))
	_, since = h.Recent("crm")
	require.Equal(t, t0.Add(100*time.Second), since, "forced open counts as open on the page")

	long := breaker.Event{Breaker: "crm", From: breaker.ForcedOpen, To: breaker.Closed, Cause: breaker.CauseOperator, Reason: strings.Repeat("r", 10000)}
	h.Record(long)
	got, _ = h.Recent("crm")
	require.Less(t, len(got[0].Reason), 700, "a reason is stored capped")
}

func reasons(ts []admin.Transition) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Reason
	}
	return out
}

// TestHistoryIsBounded: invented names cannot grow it past MaxBreakers.
func TestHistoryIsBounded(t *testing.T) {
	t.Parallel()
	h := admin.MustNewHistory(admin.HistoryConfig{PerBreaker: 2, MaxBreakers: 100})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				h.Record(event(fmt.Sprintf("invented-%d-%d", g, i), breaker.Closed, breaker.Open, breaker.CauseFailureRate, time.Time{}))
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(4000-100), h.Dropped())
	_, err := admin.NewHistory(admin.HistoryConfig{PerBreaker: 101})
	require.ErrorContains(t, err, "admin: HistoryConfig.PerBreaker = 101: must be between 1 and 100")
	require.ErrorIs(t, err, admin.ErrConfig)
	_, err = admin.NewHistory(admin.HistoryConfig{MaxBreakers: -1})
	require.ErrorContains(t, err, "admin: HistoryConfig.MaxBreakers = -1: must be positive")
}

// TestStateShowsTimeOpenAndRecentTransitions: the state document tells how long a
// breaker has been open and what happened to it, with causes and times (issue 15 k).
func TestStateShowsTimeOpenAndRecentTransitions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	opened := f.clock.Now()
	f.clock.Advance(3 * time.Minute)
	status, _, body := f.do(t, request{method: http.MethodPost, path: "/api/breakers/crm/force-open", body: `{"reason":"INC-1"}`})
	require.Equal(t, http.StatusOK, status, body)
	f.clock.Advance(2 * time.Minute)

	_, _, body = f.do(t, request{method: http.MethodGet, path: "/api/state"})
	var doc admin.State
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	require.True(t, doc.HistoryConfigured)
	require.True(t, doc.BulkheadsConfigured)
	require.True(t, doc.RoutesConfigured)
	require.Equal(t, 1.0, doc.RefreshSeconds, "the fixture's refresh")
	byName := map[string]admin.BreakerStatus{}
	for _, b := range doc.Breakers {
		byName[b.Name] = b
	}
	search := byName["search"]
	require.Equal(t, opened, search.DownSince)
	require.Equal(t, 300.0, search.OpenForSeconds)
	require.Len(t, search.Transitions, 1)
	require.Equal(t, admin.Transition{At: opened, From: "closed", To: "open", Cause: "failure_rate", Reason: search.Transitions[0].Reason}, search.Transitions[0])
	require.Contains(t, search.Transitions[0].Reason, "failure rate")

	crm := byName["crm"]
	require.Equal(t, "forced_open", crm.State)
	require.Equal(t, 120.0, crm.OpenForSeconds)
	require.Equal(t, "operator", crm.Transitions[0].Cause)
	require.Contains(t, crm.Transitions[0].Reason, "INC-1")
}

// plainSource is a BreakerSource that is not a *dependencymap.Map, for which admin.New
// makes no History of its own.
type plainSource struct{ admin.BreakerSource }

// TestStateWithoutHistory: without a History the time open comes from the breaker's
// last opening, and the document says there is no history. (Given a dependency map,
// admin.New makes a History of its own: TestTheMapFeedsTheHistory.)
func TestStateWithoutHistory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *admin.Config) { c.History, c.Refresh, c.Breakers = nil, 0, plainSource{c.Breakers} })
	f.clock.Advance(time.Minute)
	_, _, body := f.do(t, request{method: http.MethodGet, path: "/api/state"})
	var doc admin.State
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	require.False(t, doc.HistoryConfigured)
	require.Equal(t, 5.0, doc.RefreshSeconds, "the default refresh")
	require.Equal(t, "search", doc.Breakers[1].Name)
	require.Equal(t, 60.0, doc.Breakers[1].OpenForSeconds)
	require.Empty(t, doc.Breakers[1].Transitions)
}
