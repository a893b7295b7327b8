package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/retry"
)

// crmStats is what reached the local CRM, served as JSON at its /stats path.
type crmStats struct {
	Requests      int            `json:"requests"`       // every request but /stats
	Lookups       int            `json:"lookups"`        // GET /customers
	OutageLookups int            `json:"outage_lookups"` // of those, answered 503
	Notes         int            `json:"notes"`          // POST /notes
	NotesByKey    map[string]int `json:"notes_by_key"`   // POST /notes per Idempotency-Key
	NotesApplied  int            `json:"notes_applied"`  // notes stored
	Health        int            `json:"health"`         // GET /health (the probe)
	StatusLookups int            `json:"status_lookups"` // GET /notes?key= (the journal's lookup)
}

// crmFake is the CRM the offline run starts: customers, notes keyed by idempotency
// key, a health endpoint, and switches for an outage and for a lost acknowledgement.
// It is safe for concurrent use.
type crmFake struct {
	srv *httptest.Server

	mu       sync.Mutex
	down     bool // every request but /stats answers 503
	loseNext bool // the next note is stored, then answered 503 (the reply is lost)
	stats    crmStats
	applied  map[string]string // idempotency key -> note
}

func newCRMFake() *crmFake {
	c := &crmFake{applied: map[string]string{}}
	c.stats.NotesByKey = map[string]int{}
	c.srv = httptest.NewServer(c)
	return c
}

func (c *crmFake) URL() string { return c.srv.URL }
func (c *crmFake) Close()      { c.srv.Close() }

func (c *crmFake) setDown(down bool) { c.mu.Lock(); c.down = down; c.mu.Unlock() }
func (c *crmFake) loseNextReply()    { c.mu.Lock(); c.loseNext = true; c.mu.Unlock() }

// snapshot returns a copy of the counts.
func (c *crmFake) snapshot() crmStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.NotesByKey = make(map[string]int, len(c.stats.NotesByKey))
	for k, v := range c.stats.NotesByKey {
		s.NotesByKey[k] = v
	}
	return s
}

func (c *crmFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/stats" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c.snapshot())
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Requests++
	switch {
	case r.URL.Path == "/health":
		c.stats.Health++
	case r.URL.Path == "/customers":
		c.stats.Lookups++
		if c.down {
			c.stats.OutageLookups++
		}
	case r.URL.Path == "/notes" && r.Method == http.MethodPost:
		c.addNote(w, r)
		return
	case r.URL.Path == "/notes":
		c.stats.StatusLookups++
	}
	if c.down {
		http.Error(w, "CRM overloaded", http.StatusServiceUnavailable)
		return
	}
	switch r.URL.Path {
	case "/health":
		fmt.Fprintln(w, "ok")
	case "/customers":
		if r.URL.Query().Get("id") != "42" {
			http.Error(w, "no such customer", http.StatusNotFound)
			return
		}
		fmt.Fprint(w, `{"id":"42","name":"Ada Lovelace","tier":"gold"}`)
	case "/notes":
		if _, ok := c.applied[r.URL.Query().Get("key")]; !ok {
			http.Error(w, "no note with that key", http.StatusNotFound)
			return
		}
		fmt.Fprint(w, `{"applied":true}`)
	default:
		http.NotFound(w, r)
	}
}

// addNote stores a note once per idempotency key. Called with c.mu held.
func (c *crmFake) addNote(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	c.stats.Notes++
	c.stats.NotesByKey[key]++
	if c.down {
		http.Error(w, "CRM overloaded", http.StatusServiceUnavailable)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<10))
	if _, dup := c.applied[key]; !dup && key != "" {
		c.applied[key] = string(body)
		c.stats.NotesApplied++
	}
	if c.loseNext {
		c.loseNext = false
		http.Error(w, "gateway timeout after the write", http.StatusGatewayTimeout)
		return
	}
	w.WriteHeader(http.StatusCreated)
	fmt.Fprint(w, `{"stored":true}`)
}

// crmClient calls a CRM at base: the two tools and the journal's status lookup.
type crmClient struct {
	base string
	http *http.Client
}

type lookupArgs struct {
	CustomerID string `json:"customer_id"`
}

type noteArgs struct {
	CustomerID string `json:"customer_id"`
	Text       string `json:"text"`
}

// do sends req and returns the body of a 2xx answer; any other status is an error
// wrapping classify.StatusError, so agentbreaker knows a 503 from a 404.
func (c crmClient) do(req *http.Request) (map[string]any, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("crm: %w: %s", classify.StatusError(resp.StatusCode, 0, ""), strings.TrimSpace(string(body)))
	}
	var out map[string]any
	return out, json.Unmarshal(body, &out)
}

// tools returns crm_lookup (read-only) and crm_add_note (a mutation that sends the
// operation's idempotency key, which agentbreaker puts in its context).
func (c crmClient) tools() (lookup, note tool.Tool, err error) {
	lookup, err = functiontool.New(functiontool.Config{Name: "crm_lookup", Description: "Looks a customer up in the CRM."},
		func(ctx agent.Context, a lookupArgs) (map[string]any, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/customers?id="+a.CustomerID, nil)
			if err != nil {
				return nil, err
			}
			return c.do(req)
		})
	if err != nil {
		return nil, nil, err
	}
	note, err = functiontool.New(functiontool.Config{Name: "crm_add_note", Description: "Adds a note to a customer's record."},
		func(ctx agent.Context, a noteArgs) (map[string]any, error) {
			body, _ := json.Marshal(a)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/notes", strings.NewReader(string(body)))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Idempotency-Key", retry.IdempotencyKeyFrom(ctx))
			return c.do(req)
		})
	return lookup, note, err
}

// status is the journal's status lookup for the CRM: was the note with this intent's
// idempotency key stored?
func (c crmClient) status(ctx context.Context, in journal.Intent) (journal.Status, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/notes?key="+in.IdempotencyKey, nil)
	if err != nil {
		return journal.StatusUnknown, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return journal.StatusUnknown, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return journal.StatusApplied, nil
	case http.StatusNotFound:
		return journal.StatusNotApplied, nil
	}
	return journal.StatusUnknown, nil
}
