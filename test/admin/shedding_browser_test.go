package admin_test

import (
	"context"
	"math"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// Issue 25 (e): in a real browser, a dependency whose throttle is shedding shows a
// "shedding N%" badge next to its state, with the calls shed by priority on hover; a
// dependency that sheds nothing shows none.
func TestPageShowsSheddingInHeadlessChromium(t *testing.T) {
	path := chromium(t)
	fc := clock.NewFake(time.Time{})
	deps := dependencymap.MustNew(dependencymap.Config{Clock: fc, Dependencies: map[string]dependencymap.Dependency{
		"search": {Tools: []string{"web_search"}, Throttle: &throttle.Config{K: 1, MinRequests: 1, Rand: func() uint64 { return 0 }}},
		"crm":    {Tools: []string{"lookup"}, Throttle: &throttle.Config{}},
	}})
	th, _ := deps.Throttle("search")
	for i := range 10 {
		th.Report(i < 5) // p = 5/11
	}
	for range 3 {
		th.Allow(throttle.Low)
	}
	want := th.Probability()
	srv := httptest.NewServer(admin.MustNew(admin.Config{Token: token, Breakers: deps, Clock: fc}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("no-proxy-server", true))
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()

	require.NoError(t, chromedp.Do(browser,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#load")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-dependency="crm"] td.state`)),
	))
	got, err := chromedp.Run(browser, chromedp.Evaluate[map[string]string](`({
		badge: document.querySelector('tr[data-dependency="search"] .badge.shedding').textContent,
		tip: document.querySelector('tr[data-dependency="search"] .badge.shedding').title,
		crm: String(document.querySelectorAll('tr[data-dependency="crm"] .badge.shedding').length)})`))
	require.NoError(t, err)
	require.Equal(t, "shedding "+strconv.Itoa(int(math.Round(want*100)))+"%", got["badge"])
	require.Contains(t, got["tip"], "low 3, normal 0, high 0, critical 0")
	require.Equal(t, "0", got["crm"])
}
