package dependencymap

import "testing"

func BenchmarkForTool(b *testing.B) {
	m := MustNew(crmConfig())
	for b.Loop() {
		if _, err := m.ForTool("update_customer"); err != nil {
			b.Fatal(err)
		}
	}
}
