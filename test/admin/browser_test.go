package admin_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
)

// chromium finds Debian's chromium. Without it the browser test skips, except under
// CI=true, where its absence is a failure: CI installs it (apt-get install -y chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not on PATH (CI=true): install it with apt-get install -y chromium")
	}
	t.Skip("chromium is not on PATH; install Debian's chromium package to run the browser test")
	return ""
}

// hostileName is a breaker name a model could invent: markup, if the page ever put it
// into HTML instead of text, would run.
const hostileName = `<img src=x onerror="document.title='pwned'">`

// TestPageInHeadlessChromium loads the admin page in a real browser from a real server
// on 127.0.0.1: a wrong token shows an error and no state; the right one shows every
// breaker's state, how long it has been open and its last transitions; the page
// refreshes itself and can be paused; clicking "Force open" forces the breaker open;
// hostile names are shown as text; parts that are not configured are hidden. It saves
// a 1280x800 screenshot to $TMPDIR/admin.png.
func TestPageInHeadlessChromium(t *testing.T) {
	path := chromium(t)
	f := newFixture(t)
	// A breaker with a hostile name, forced open with a hostile reason.
	hostile, err := f.deps.ForTool(hostileName)
	require.NoError(t, err)
	f.clock.Advance(11 * time.Minute)
	hostile.ForceOpen(`<script>document.title='pwned'</script> provider maintenance`)
	f.clock.Advance(time.Minute)

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // the CI container runs as root, where the sandbox cannot start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-proxy-server", true),
	)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()

	states := func() map[string]string {
		t.Helper()
		m, err := chromedp.Run(browser, chromedp.Evaluate[map[string]string](`Object.fromEntries(
			[...document.querySelectorAll("#breakers tbody tr")].map(tr => [tr.dataset.dependency, tr.querySelector("td.state").textContent]))`))
		require.NoError(t, err)
		return m
	}
	poll := func(js string) {
		t.Helper()
		_, err := chromedp.Run(browser, chromedp.Poll[bool](js))
		require.NoError(t, err, "waiting for %s", js)
	}
	rowJS := func(dep string) string { // the row of a dependency, found without a selector
		return `[...document.querySelectorAll("#breakers tbody tr")].find(tr => tr.dataset.dependency === ` + jsString(dep) + `)`
	}

	// A wrong token: the page says so, shows nothing and does not refresh.
	require.NoError(t, chromedp.Do(browser,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(f.srv.URL+"/"),
		chromedp.SendKeys(chromedp.CSS("#token"), "wrong-token-0123456789"),
		chromedp.Click(chromedp.CSS("#load")),
	))
	poll(`document.querySelector("#status").className === "error"`)
	status, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("#status")))
	require.NoError(t, err)
	require.Contains(t, status, "401")
	require.Empty(t, states())
	refresh, err := chromedp.Run(browser, chromedp.Evaluate[string](`document.body.dataset.refresh + "/" + document.body.dataset.timer`))
	require.NoError(t, err)
	require.Equal(t, "off/none", refresh)

	// The right token: every breaker and its state, the open ones first.
	require.NoError(t, chromedp.Do(browser,
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#token").value = ""`),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#load")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-dependency="crm"] td.state`)),
	))
	require.Equal(t, map[string]string{"crm": "closed", "search": "open", hostileName: "forced_open"}, states())
	order, err := chromedp.Run(browser, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#breakers tbody tr")].map(tr => tr.dataset.dependency)`))
	require.NoError(t, err)
	require.Equal(t, []string{"search", hostileName, "crm"}, order, "refusing breakers first, longest open first")

	// Time open and the last transitions, with causes.
	cells, err := chromedp.Run(browser, chromedp.Evaluate[map[string]string](`({
		searchOpen: `+rowJS("search")+`.querySelector("td.open-for").textContent,
		searchLast: `+rowJS("search")+`.querySelector("ol.transitions li").textContent,
		hostileOpen: `+rowJS(hostileName)+`.querySelector("td.open-for").textContent,
		hostileName: `+rowJS(hostileName)+`.querySelector("td.name").textContent,
		hostileWhy: `+rowJS(hostileName)+`.querySelector("ol.transitions .why").textContent,
		title: document.title,
		images: String(document.querySelectorAll("main img, main script").length)})`))
	require.NoError(t, err)
	require.Equal(t, "12m 00s", cells["searchOpen"])
	require.Contains(t, cells["searchLast"], "closed → open")
	require.Contains(t, cells["searchLast"], "failure_rate")
	require.Equal(t, "1m 00s", cells["hostileOpen"])
	require.Equal(t, hostileName, cells["hostileName"], "a hostile name is shown as text")
	require.Contains(t, cells["hostileWhy"], "<script>document.title='pwned'</script>")
	require.Equal(t, "agentbreaker admin", cells["title"], "no markup from names or reasons ran")
	require.Equal(t, "0", cells["images"])

	// The page refreshes itself: a change made elsewhere shows up without a click.
	refresh, err = chromedp.Run(browser, chromedp.Evaluate[string](`document.body.dataset.refresh + "/" + document.body.dataset.timer`))
	require.NoError(t, err)
	require.Equal(t, "on/scheduled", refresh)
	f.breaker(t, "search").Reset("probe by hand")
	poll(rowJS("search") + `.querySelector("td.state").textContent === "closed"`)

	// Paused, nothing is scheduled; resumed, it catches up.
	require.NoError(t, chromedp.Do(browser, chromedp.Click(chromedp.CSS("#pause"))))
	refresh, err = chromedp.Run(browser, chromedp.Evaluate[string](`document.body.dataset.refresh + "/" + document.body.dataset.timer + "/" + document.querySelector("#pause").textContent`))
	require.NoError(t, err)
	require.Equal(t, "paused/none/Resume", refresh)
	f.breaker(t, "search").ForceOpen("drill")
	require.NoError(t, chromedp.Do(browser, chromedp.Click(chromedp.CSS("#pause"))))
	poll(rowJS("search") + `.querySelector("td.state").textContent === "forced_open"`)

	// Force the CRM open, with a reason.
	f.clock.Advance(3 * time.Minute)
	require.NoError(t, chromedp.Do(browser,
		chromedp.SendKeys(chromedp.CSS("#reason"), "INC-4711 drill"),
		chromedp.Click(chromedp.CSS(`tr[data-dependency="crm"] button[data-action="force-open"]`)),
	))
	poll(`document.querySelector('tr[data-dependency="crm"] td.state').textContent === "forced_open"`)
	require.Equal(t, map[string]string{"crm": "forced_open", "search": "forced_open", hostileName: "forced_open"}, states())
	require.Equal(t, breaker.ForcedOpen, f.breaker(t, "crm").State(), "the click reached the breaker")

	// The other tables, and approving a journal intent.
	counts, err := chromedp.Run(browser, chromedp.Evaluate[map[string]int](`({
		bulkheads: document.querySelectorAll("#bulkheads tbody tr").length,
		routes: document.querySelectorAll("#routes tbody tr").length,
		serving: [...document.querySelectorAll("#routes td.serving")].filter(td => td.textContent === "serving").length,
		intents: document.querySelectorAll("#journal tbody tr").length})`))
	require.NoError(t, err)
	require.Equal(t, map[string]int{"bulkheads": 1, "routes": 2, "serving": 1, "intents": 2}, counts)

	// The operator's view, with everything on it.
	f.clock.Advance(47 * time.Second)
	f.breaker(t, "search").Reset("INC-4711: provider says fixed")
	search, _ := f.deps.Get("search")
	p, err := search.Allow()
	require.NoError(t, err)
	p.Failure() // trips again: open, with a failure-rate reason
	poll(rowJS("search") + `.querySelector("td.state").textContent === "open"`)
	shot, err := chromedp.Run(browser, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	png := filepath.Join(os.TempDir(), "admin.png")
	require.NoError(t, os.WriteFile(png, shot, 0o644))
	t.Logf("screenshot: %s", png)

	require.NoError(t, chromedp.Do(browser,
		chromedp.Click(chromedp.CSS(`tr[data-intent="int-1"] button[data-action="approve"]`)),
	))
	poll(`document.querySelectorAll("#journal tbody tr").length === 1`)
	approved, _ := f.journal.resolved()
	require.Equal(t, []string{"int-1"}, approved)
	var reasons []string
	for _, r := range f.logs.records(t) {
		if r["msg"] == "agentbreaker admin: operator action" {
			reasons = append(reasons, r["action"].(string)+": "+r["reason"].(string))
		}
	}
	require.Equal(t, []string{"force-open: INC-4711 drill", "approve: INC-4711 drill"}, reasons)

	// A handler with only breakers: the other parts are hidden. The history column stays:
	// given the dependency map and no History, the handler keeps one of its own.
	bare := newFixture(t, func(c *admin.Config) { c.Bulkheads, c.Routes, c.Journal, c.History = nil, nil, nil, nil })
	require.NoError(t, chromedp.Do(browser,
		chromedp.Navigate(bare.srv.URL+"/"),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#load")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-dependency="crm"] td.state`)),
	))
	hidden, err := chromedp.Run(browser, chromedp.Evaluate[map[string]bool](`({
		bulkheads: document.querySelector("#bulkheads-section").hidden,
		routes: document.querySelector("#routes-section").hidden,
		journal: document.querySelector("#journal-section").hidden,
		historyColumn: document.querySelector("#breakers th.history-col").hidden,
		historyCells: document.querySelectorAll("#breakers td.transitions-cell").length === 0,
		breakers: document.querySelector("#breakers-section").hidden})`))
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"bulkheads": true, "routes": true, "journal": true, "historyColumn": false, "historyCells": false, "breakers": false}, hidden)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
