package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/agentbreaker/agentbreaker/admin"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// replicaScopes stands for the *fleet.Fleet of fleet mode, which implements
// admin.Scopes: "crm" follows the fleet, "search" decides alone on this replica.
type replicaScopes map[string]string

func (s replicaScopes) Scope(dependency string) string { return s[dependency] }

func ExampleScopes() {
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{"crm": {}, "search": {}},
	})
	const secret = "generate-me-and-keep-me-in-a-vault"
	// In fleet mode: Scopes: f, the *fleet.Fleet the map is attached to.
	h := admin.MustNew(admin.Config{Token: secret, Breakers: deps,
		Scopes: replicaScopes{"crm": admin.ScopeFleet, "search": admin.ScopeLocal}})
	srv := httptest.NewServer(h)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/state", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	var state admin.State
	_ = json.NewDecoder(res.Body).Decode(&state)
	for _, b := range state.Breakers {
		fmt.Println(b.Name, b.State, b.Scope)
	}
	// Output:
	// crm closed fleet
	// search closed local
}
