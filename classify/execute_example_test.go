package classify_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// Direct use without adk-go: one call allows, runs, classifies and reports.
func ExampleExecute() {
	crm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer crm.Close()
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
	})

	b, _ := deps.ForTool("lookup_customer") // nil for an exempt tool: Execute then runs the call unguarded
	for i := range 25 {
		err := classify.Execute(context.Background(), b, func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, crm.URL, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				return classify.StatusError(resp.StatusCode, 0, "") // typed: 5xx counts, 404 would not
			}
			return nil
		})
		if errors.Is(err, breaker.ErrOpen) {
			fmt.Printf("call %d: not sent, %s is %s\n", i+1, b.Name(), b.State())
			break
		}
	}
	// Output:
	// call 21: not sent, crm is open
}
