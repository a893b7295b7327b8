package admin_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

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

// TestPageInHeadlessChromium loads the admin page in a real browser from a real server
// on 127.0.0.1: a wrong token shows an error and no state; the right one shows every
// breaker's state; clicking "Force open" forces the breaker open.
func TestPageInHeadlessChromium(t *testing.T) {
	path := chromium(t)
	f := newFixture(t)

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

	// A wrong token: the page says so and shows nothing.
	require.NoError(t, chromedp.Do(browser,
		chromedp.Navigate(f.srv.URL+"/"),
		chromedp.SendKeys(chromedp.CSS("#token"), "wrong-token-0123456789"),
		chromedp.Click(chromedp.CSS("#load")),
	))
	_, err := chromedp.Run(browser, chromedp.Poll[bool](`document.querySelector("#status").className === "error"`))
	require.NoError(t, err)
	status, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("#status")))
	require.NoError(t, err)
	require.Contains(t, status, "401")
	require.Empty(t, states())

	// The right token: every breaker and its state.
	require.NoError(t, chromedp.Do(browser,
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#token").value = ""`),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#load")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-dependency="crm"] td.state`)),
	))
	require.Equal(t, map[string]string{"crm": "closed", "search": "open"}, states())

	// Force the CRM open, with a reason.
	require.NoError(t, chromedp.Do(browser,
		chromedp.SendKeys(chromedp.CSS("#reason"), "INC-4711 drill"),
		chromedp.Click(chromedp.CSS(`tr[data-dependency="crm"] button[data-action="force-open"]`)),
	))
	_, err = chromedp.Run(browser, chromedp.Poll[bool](
		`document.querySelector('tr[data-dependency="crm"] td.state').textContent === "forced_open"`))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"crm": "forced_open", "search": "open"}, states())

	require.Equal(t, breaker.ForcedOpen, f.breaker(t, "crm").State(), "the click reached the breaker")

	// The other tables, and approving a journal intent.
	counts, err := chromedp.Run(browser, chromedp.Evaluate[map[string]int](`({
		bulkheads: document.querySelectorAll("#bulkheads tbody tr").length,
		routes: document.querySelectorAll("#routes tbody tr").length,
		serving: [...document.querySelectorAll("#routes td.serving")].filter(td => td.textContent === "serving").length,
		intents: document.querySelectorAll("#journal tbody tr").length})`))
	require.NoError(t, err)
	require.Equal(t, map[string]int{"bulkheads": 1, "routes": 2, "serving": 1, "intents": 2}, counts)
	require.NoError(t, chromedp.Do(browser,
		chromedp.Click(chromedp.CSS(`tr[data-intent="int-1"] button[data-action="approve"]`)),
	))
	_, err = chromedp.Run(browser, chromedp.Poll[bool](`document.querySelectorAll("#journal tbody tr").length === 1`))
	require.NoError(t, err)
	approved, _ := f.journal.resolved()
	require.Equal(t, []string{"int-1"}, approved)
	var reasons []string
	for _, r := range f.logs.records(t) {
		if r["msg"] == "agentbreaker admin: operator action" {
			reasons = append(reasons, r["action"].(string)+": "+r["reason"].(string))
		}
	}
	require.Equal(t, []string{"force-open: INC-4711 drill", "approve: INC-4711 drill"}, reasons)
}
