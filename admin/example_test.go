package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

func Example() {
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
	})
	const secret = "generate-me-and-keep-me-in-a-vault" // in production: from a secret store
	h := admin.MustNew(admin.Config{Token: secret, Breakers: deps})

	// Mount it under a prefix on an internal listener.
	mux := http.NewServeMux()
	mux.Handle("/ops/breakers/", http.StripPrefix("/ops/breakers", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	send := func(method, path, body string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+"/ops/breakers"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		return res
	}

	res := send(http.MethodPost, "/api/breakers/crm/force-open", `{"reason":"CRM maintenance window"}`)
	var out admin.ActionResult
	_ = json.NewDecoder(res.Body).Decode(&out)
	res.Body.Close()
	fmt.Println(res.StatusCode, out.Action, out.Breaker.Name, out.Breaker.State)

	noToken, _ := http.Get(srv.URL + "/ops/breakers/api/state")
	noToken.Body.Close()
	fmt.Println("without the token:", noToken.StatusCode)
	// Output:
	// 200 force-open crm forced_open
	// without the token: 401
}

func ExampleHistory() {
	history := admin.MustNewHistory(admin.HistoryConfig{PerBreaker: 5})
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
		OnStateChange: []func(breaker.Event){history.Record},
	})
	crm, _ := deps.Get("crm")
	crm.ForceOpen("INC-4711: CRM maintenance")
	crm.Reset("maintenance over")

	recent, _ := history.Recent("crm") // newest first; the page shows these
	for _, t := range recent {
		fmt.Println(t.From, "->", t.To, t.Cause)
	}
	// Output:
	// forced_open -> closed operator
	// closed -> forced_open operator
}
