package hostiletest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"
	_ "modernc.org/sqlite" // to read the journal's file directly

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/internal/syncbuf"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/journal/sqlite"
	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// The corpus lives in corpus.go, exported so that the tests of other packages (the
// MCP guard's) drive the same text through their own paths.
var (
	corpus = Corpus
	leaks  = Leaks
)

func requireNoLeak(t *testing.T, where, text string) {
	t.Helper()
	require.NotEmpty(t, text, "%s: nothing to search", where)
	if l := leaks(text); len(l) > 0 {
		t.Errorf("%s leaks the dependency's text (%d bytes searched):\n  %s", where, len(text), strings.Join(l, "\n  "))
	}
}

// answerSecrets are the corpus's secrets that must not reach the model even inside a
// dependency's answer: redact.Answer masks their shapes (the long hex run is kept: in
// an answer such a run is more often an identifier the model needs).
var answerSecrets = []string{
	"hunter2", "AKIAZQ9XKAWS00000000", "ZQ9XKEXAMPLEKEY", "ZQ9XKBEARER", "ZQ9XKPRIVATEKEYBODY", "ZQ9XKJWTsignature",
	"4111 1111 1111 1111", "4111111111111111", "zq9xk.customer",
}

// requireAnswerCleaned checks what the model read of the dependency's answers: the
// words arrive (the injection too: documented), cleaned of escapes and control
// characters, valid UTF-8, each string cut at 512 bytes, the secrets masked.
func requireAnswerCleaned(t *testing.T, text string) {
	t.Helper()
	require.Contains(t, text, "ZQ9XKINJECT", "an answer's words reach the model")
	for _, s := range answerSecrets {
		require.NotContains(t, text, s, "a secret in an answer reached the model")
	}
	var decoded []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		var p map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &p))
		decoded = append(decoded, p)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			require.True(t, utf8.ValidString(x), "invalid UTF-8 reached the model: %q", x)
			require.LessOrEqual(t, len(x), 512, "an answer's string is bounded")
			for _, r := range x {
				require.False(t, r < 0x20 || r == 0x7f || r == '\u202e', "control or format character %U reached the model", r)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, p := range decoded {
		walk(p)
	}
}

// dependency serves the corpus: /5xx/N answers 503 with entry N as its body, /inband/N
// answers 200 with entry N as an in-band error, /lookup/N fails a status lookup.
func dependency(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		n, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil || n < 0 || n >= len(corpus) {
			http.NotFound(w, r)
			return
		}
		body := corpus[n].Body
		switch parts[0] {
		case "5xx":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, body)
		case "inband":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"status": "error", "error": body, "details": body})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// client is how a typical tool calls its dependency: through agentbreaker's transport,
// turning a bad status into an error that quotes the body, as most HTTP tools do.
type client struct {
	base string
	http *http.Client
}

func (c *client) get(ctx context.Context, path string) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		return nil, fmt.Errorf("crm answered %d: %s", resp.StatusCode, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("bad JSON %q: %w", b, err)
	}
	return m, nil
}

type caseArgs struct {
	Case int `json:"case"`
}

func newTool(t *testing.T, name string, run func(ctx agent.Context, n int) (map[string]any, error)) tool.Tool {
	ft, err := functiontool.New(functiontool.Config{Name: name, Description: "Looks something up."},
		func(ctx agent.Context, a caseArgs) (map[string]any, error) { return run(ctx, a.Case) })
	require.NoError(t, err)
	return ft
}

// toolsInTurn are called in this order in each turn, one turn per corpus entry.
// The last one's name is text too: not valid UTF-8, with a terminal escape.
var toolsInTurn = []string{"fetch_5xx", "fetch_inband", "fail_go", "charge", badName}

const badName = "fetch\xff\x1b[31mname"

// script calls every tool of toolsInTurn with the turn's case, then answers.
func script(r breakertest.Request) breakertest.Step {
	// The turn's case is in the last user text; the calls made since it are counted
	// from the function responses after it.
	n, since := -1, 0
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			switch {
			case c.Role == genai.RoleUser && p.Text != "":
				if v, err := strconv.Atoi(strings.TrimPrefix(p.Text, "case ")); err == nil {
					n, since = v, 0
				}
			case p.FunctionResponse != nil:
				since++
			}
		}
	}
	if n < 0 || since >= len(toolsInTurn) {
		return breakertest.Text("done")
	}
	return breakertest.Call(toolsInTurn[since], map[string]any{"case": n})
}

// recorder keeps everything a hook was called with, as text.
type recorder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (r *recorder) add(v any) {
	r.mu.Lock()
	fmt.Fprintf(&r.b, "%+v\n", v)
	r.mu.Unlock()
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.String()
}

// TestHostileUpstreamTextReachesNobody is issue 11's "done means": every entry of the
// corpus, served as a 5xx body, as a 200 with an in-band error and returned as a Go
// error string by a tool (and by a mutating tool, whose status lookup then fails with
// it), through the real runner; no distinctive token may reach any later model
// request, log record, hook call, journal row, admin response or metrics exposition.
func TestHostileUpstreamTextReachesNobody(t *testing.T) {
	ctx := t.Context()
	srv := dependency(t)
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hooks := &recorder{}
	var lookups atomic.Int64

	reg := prometheus.NewRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg, Logger: logger})
	deps := dependencymap.MustNew(dependencymap.Config{
		PolicyVersion: "hostile-1",
		Default:       breaker.Policy{MinimumCalls: 100000}, // every call reaches the dependency
		Dependencies: map[string]dependencymap.Dependency{
			"crm":      {Tools: []string{"fetch_5xx", "fetch_inband", "fail_go"}},
			"payments": {Tools: []string{"charge"}},
		},
		OnStateChange: []func(breaker.Event){tel.BreakerEvent, func(e breaker.Event) { hooks.add(e) }},
	})
	tel.Watch(deps)

	dbPath := filepath.Join(t.TempDir(), "journal.db")
	j, err := journal.Open(ctx, journal.Config{
		Backend: sqlite.Backend{Path: dbPath},
		Logger:  logger,
		Lookups: map[string]journal.StatusLookup{"payments": func(context.Context, journal.Intent) (journal.Status, error) {
			// A status lookup that fails quoting the dependency, as lookups do.
			n := lookups.Add(1)
			return journal.StatusUnknown, fmt.Errorf("status lookup: %s", corpus[int(n)%len(corpus)].Body)
		}},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })

	r := retry.MustNew(retry.Config{
		Journal: j.ForRetry(), Logger: logger,
		OnAttempt: []func(context.Context, retry.Event){telemetry.RetryHook(tel), func(_ context.Context, e retry.Event) { hooks.add(e) }},
	})
	cb := callbacks.MustNew(callbacks.Config{
		Dependencies: deps,
		SideEffects: callbacks.SideEffects{
			MutatingTools: []string{"charge"},
			Retry:         r,
			Journal:       j,
		},
		Observability: callbacks.Observability{
			Logger:   logger,
			Observer: tel,
			OnEvent:  func(e callbacks.Event) { hooks.add(e) },
		},
	})

	c := &client{base: srv.URL, http: &http.Client{Transport: httptransport.MustNew(httptransport.Config{Map: deps})}}
	tools := []tool.Tool{
		newTool(t, "fetch_5xx", func(ctx agent.Context, n int) (map[string]any, error) { return c.get(ctx, fmt.Sprintf("/5xx/%d", n)) }),
		newTool(t, "fetch_inband", func(ctx agent.Context, n int) (map[string]any, error) {
			return c.get(ctx, fmt.Sprintf("/inband/%d", n))
		}),
		newTool(t, "fail_go", func(_ agent.Context, n int) (map[string]any, error) { return nil, errors.New(corpus[n].Body) }),
		newTool(t, badName, func(_ agent.Context, n int) (map[string]any, error) { return nil, errors.New(corpus[n].Body) }),
		cb.MustWithIdempotencyKey(newTool(t, "charge", func(ctx agent.Context, n int) (map[string]any, error) {
			return c.get(ctx, fmt.Sprintf("/5xx/%d", n))
		})),
	}
	m := breakertest.MustNewModel(breakertest.ModelConfig{Then: script})
	a, err := llmagent.New(llmagent.Config{Name: "root", Model: m, Tools: tools})
	require.NoError(t, err)
	h := breakertest.MustNewHarness(breakertest.HarnessConfig{Agent: a, Plugins: []*plugin.Plugin{cb.Plugin()}})

	for n := range corpus {
		sid, err := h.NewSession(ctx)
		require.NoError(t, err)
		turn, err := h.Run(ctx, sid, "case "+strconv.Itoa(n))
		require.NoError(t, err)
		require.Len(t, turn.FunctionResponses(), len(toolsInTurn), "case %d: every tool was called", n)
		require.Equal(t, "done", turn.FinalText())
	}
	// Settle what the mutations left: every status lookup fails with the corpus.
	_, err = j.Reconcile(ctx)
	require.NoError(t, err)

	t.Run("model requests", func(t *testing.T) {
		// Both sides of the boundary (issue 22): fetch_inband's dependency answered (an
		// in-band failure naming no outage), so the model reads its words, cleaned and
		// with known secret shapes masked; every other tool's dependency failed, so the
		// model reads none of them.
		reqs := m.Requests()
		require.Greater(t, len(reqs), len(corpus)*len(toolsInTurn))
		var failed, answered strings.Builder
		responses := 0
		for _, req := range reqs {
			for _, c := range req.Contents {
				for _, p := range c.Parts {
					w := &failed
					if p.FunctionResponse != nil && p.FunctionResponse.Name == "fetch_inband" {
						w = &answered
					}
					b, err := json.Marshal(p)
					require.NoError(t, err)
					w.Write(b)
					w.WriteByte('\n')
				}
			}
			responses += len(req.FunctionResponses())
		}
		require.NotZero(t, responses, "function responses were searched")
		requireNoLeak(t, "a model request", failed.String())
		requireAnswerCleaned(t, answered.String())
	})
	// The journal's own records are searched apart: their fix is the journal's.
	own, journalRecords := splitLog(t, logs.String(), "journal reconciled intent")
	t.Run("log records", func(t *testing.T) {
		requireNoLeak(t, "the log", own)
		require.Contains(t, own, `"upstream_error":{"len":`, "failures are logged with a fingerprint")
		require.Contains(t, own, `"error":{"len":`, "retry attempts are logged with a fingerprint")
	})
	t.Run("journal log records", func(t *testing.T) {
		requireNoLeak(t, "the journal's log", journalRecords)
	})
	t.Run("hook calls", func(t *testing.T) {
		requireNoLeak(t, "a hook call", hooks.String())
	})
	t.Run("metrics exposition", func(t *testing.T) {
		rec := httptest.NewRecorder()
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(rec,
			httptest.NewRequest(http.MethodGet, "/metrics", nil))
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		require.Contains(t, rec.Body.String(), "agentbreaker_calls_total")
		requireNoLeak(t, "/metrics", rec.Body.String())
	})
	rows, notes := dumpSQLite(t, dbPath, "note", "reason")
	t.Run("journal rows", func(t *testing.T) {
		requireNoLeak(t, "the journal", rows)
	})
	t.Run("journal notes", func(t *testing.T) {
		requireNoLeak(t, "the journal's notes", notes)
	})
	const token = "hostile-test-token-0123456789abcdef"
	adminGet := func(t *testing.T, journal admin.JournalAdmin, path string) *httptest.ResponseRecorder {
		ah, err := admin.New(admin.Config{Token: token, Breakers: deps, Journal: journal, Logger: logger})
		require.NoError(t, err)
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		ah.ServeHTTP(rec, req)
		return rec
	}
	t.Run("admin page and state", func(t *testing.T) {
		for _, path := range []string{"/", "/api/state"} {
			rec := adminGet(t, admin.JournalOf(j), path)
			require.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body.String())
			requireNoLeak(t, "admin "+path, rec.Body.String())
		}
	})
	t.Run("admin journal", func(t *testing.T) {
		rec := adminGet(t, admin.JournalOf(j), "/api/journal")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		requireNoLeak(t, "admin /api/journal", rec.Body.String())
	})
	t.Run("admin error bodies", func(t *testing.T) {
		before := len(logs.String())
		rec := adminGet(t, failingJournal{}, "/api/journal")
		require.GreaterOrEqual(t, rec.Code, 500)
		requireNoLeak(t, "an admin error body", rec.Body.String())
		requireNoLeak(t, "the admin's log", logs.String()[before:])
	})
}

// failingJournal is a journal whose database answers with an error quoting a
// dependency (a status lookup's text stored in a row, a driver echoing a query).
type failingJournal struct{}

func (failingJournal) Pending(context.Context) ([]admin.Intent, error) {
	return nil, errors.New("query failed near " + corpus[2].Body)
}
func (failingJournal) Approve(context.Context, string) error { return nil }
func (failingJournal) Discard(context.Context, string) error { return nil }

// dumpSQLite reads every row of every table of the file, as text: the columns named
// in apart separately.
func dumpSQLite(t *testing.T, path string, apart ...string) (string, string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	require.NoError(t, err)
	var tables []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		tables = append(tables, n)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	require.NotEmpty(t, tables)
	var out, kept strings.Builder
	count := 0
	for _, tbl := range tables {
		rows, err := db.Query(`SELECT * FROM "` + tbl + `"`)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			for i, v := range vals {
				w := &out
				if slices.Contains(apart, cols[i]) {
					w = &kept
				}
				fmt.Fprintf(w, "%s.%s=", tbl, cols[i])
				switch v := v.(type) {
				case []byte:
					w.Write(v)
				default:
					fmt.Fprint(w, v)
				}
				w.WriteByte(';')
			}
			out.WriteByte('\n')
			count++
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	require.NotZero(t, count, "the journal has rows")
	return out.String(), kept.String()
}

// splitLog parses JSON log lines and returns those whose msg is not skipMsg, and those
// whose msg is, each joined by newlines.
func splitLog(t *testing.T, log, skipMsg string) (rest, skipped string) {
	t.Helper()
	var a, b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec struct {
			Msg string `json:"msg"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "every log line is JSON: %q", excerpt(line, 0))
		if rec.Msg == skipMsg {
			b.WriteString(line + "\n")
		} else {
			a.WriteString(line + "\n")
		}
	}
	return a.String(), b.String()
}
