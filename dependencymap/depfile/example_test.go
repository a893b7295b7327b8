package depfile_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

// An operator's file becomes a dependencymap.Config, checked completely: the Map it
// builds is the one the agent serves with.
func Example() {
	dir, _ := os.MkdirTemp("", "depfile-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "breakers.yaml")
	_ = os.WriteFile(path, []byte(`
policy_version: "2026-11-30"
dependencies:
  crm:
    tools: [lookup_customer, update_customer]
    policy:
      cooldown: 1m
      slow_call_threshold: off
`), 0o600)

	cfg, err := depfile.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := dependencymap.MustNew(cfg)
	b, _ := m.ForTool("update_customer")
	fmt.Println(b.Name(), b.Policy().Cooldown, b.Policy().Version)
	// Output:
	// crm 1m0s 2026-11-30
}

func ExampleParseYAML() {
	cfg, err := depfile.ParseYAML([]byte(`
dependencies:
  crm:
    tools: [lookup_customer]
    policy:
      window: 90m
`))
	fmt.Println(cfg.Dependencies == nil, err)
	// Output:
	// true dependencymap: line 6, column 7: dependencies.crm.policy.window = "90m": must be between 1s and 1h
}

// Read reports every problem of a file at once, each where the file has it.
func ExampleRead() {
	dir, _ := os.MkdirTemp("", "depfile-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "breakers.yaml")
	_ = os.WriteFile(path, []byte(`default:
  minimum_calls: 0.5
dependencies:
  crm:
    tools: [lookup_customer]
    policy:
      window: soon
      failure_rate_threshold: 7
`), 0o600)

	d, err := depfile.Read(path)
	if err != nil {
		fmt.Println(err) // the file could not be read
		return
	}
	for _, p := range d.Problems {
		fmt.Println(p)
	}
	// Output:
	// line 2, column 18: default.minimum_calls = 0.5: want a whole number
	// line 7, column 7: dependencies.crm.policy.window = "soon": want a positive duration such as "30s"
	// line 8, column 7: dependencies.crm.policy.failure_rate_threshold = 7: must be in (0, 1]
}
