package dependencymap_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/adaptivelimit"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

func TestAdaptiveLimitPerDependencyAndModel(t *testing.T) {
	m, err := dependencymap.New(dependencymap.Config{
		Dependencies: map[string]dependencymap.Dependency{
			"crm":  {Tools: []string{"lookup"}, Adaptive: &adaptivelimit.Config{MaxLimit: 8}},
			"mail": {Tools: []string{"send"}},
		},
		Models: []dependencymap.ModelEndpoint{{Model: "m", Region: "eu", Adaptive: &adaptivelimit.Config{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if l := m.Limiter("crm"); l == nil || l.Name() != "crm" || l.Limit() != 8 {
		t.Errorf("crm's limiter: %v", l)
	}
	if m.Limiter("mail") != nil {
		t.Error("mail has no Adaptive and must have no limiter")
	}
	if l := m.Limiter("m@eu"); l == nil || l.Name() != "m@eu" {
		t.Errorf("model limiter: %v", l)
	}
	_, err = dependencymap.New(dependencymap.Config{Dependencies: map[string]dependencymap.Dependency{
		"crm": {Tools: []string{"lookup"}, Adaptive: &adaptivelimit.Config{MinLimit: -1}},
	}})
	if err == nil || err.Error() != `dependencymap: Dependencies["crm"].Adaptive.MinLimit = -1: must be from 1 to MaxLimit` {
		t.Errorf("bad MinLimit: %v", err)
	}
}
