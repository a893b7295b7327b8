package httptransport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/httptransport"
	"github.com/agentbreaker/agentbreaker/retry"
)

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("server got key:", r.Header.Get("Idempotency-Key"))
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)

	// The CRM is reached at this host; its breaker trips on the first failure here.
	m := dependencymap.MustNew(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"crm": {Hosts: []string{u.Host}},
	}})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: httptransport.MustNew(httptransport.Config{Base: base, Map: m})}

	ctx := retry.WithIdempotencyKey(context.Background(), "order-17")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/orders", nil)
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	c := httptransport.Classify(ctx, resp, err)
	fmt.Println(c.Outcome, c.Class, "retry after", c.RetryAfter)
	b, _ := m.Get("crm")
	fmt.Println("crm window:", b.Snapshot().Window.Failures, "failure(s)")
	// Output:
	// server got key: order-17
	// FAILED http_429 retry after 30s
	// crm window: 1 failure(s)
}
