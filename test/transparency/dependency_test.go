package transparency_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/classify"
)

// notFound is the CRM's answer for a customer it does not know: a business answer
// (404), whose text reaches the model. It holds what redact.Answer cleans (a
// terminal escape, a key in a URL), so the documented cleaning shows.
const notFound = "customer 7 is not in the CRM \x1b[31m(see https://admin:hunter2@crm.internal/help)"

// dependency is a local HTTP service that logs every request reaching it (method,
// path and query), answering by path.
type dependency struct {
	srv *httptest.Server
	mu  sync.Mutex
	log []string
}

func newDependency(t *testing.T) *dependency {
	t.Helper()
	d := &dependency{}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		d.mu.Lock()
		d.log = append(d.log, r.Method+" "+r.URL.RequestURI())
		d.mu.Unlock()
		if r.URL.Query().Get("q") == "customer 7" {
			http.Error(w, notFound, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"path": r.URL.Path, "q": r.URL.Query().Get("q"), "ok": true})
	}))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *dependency) requests() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.log)
}

type queryArgs struct {
	Query string `json:"query"`
}

// httpTool is a function tool that GETs path on the dependency with the query, as a
// tool author writes one: a JSON body is the result, a status of 400 or more a
// classify.StatusError with the body's text (docs/failures.md).
func httpTool(t *testing.T, d *dependency, name, path string, fcfg functiontool.Config) tool.Tool {
	t.Helper()
	fcfg.Name = name
	if fcfg.Description == "" {
		fcfg.Description = "Calls " + path + " with the query."
	}
	tl, err := functiontool.New(fcfg, func(ctx agent.Context, a queryArgs) (map[string]any, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.srv.URL+path+"?q="+url.QueryEscape(a.Query), nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 400 {
			return nil, classify.StatusError(resp.StatusCode, 0, string(body))
		}
		var out map[string]any
		if err := json.Unmarshal(body, &out); err != nil {
			return nil, err
		}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}
