package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLintWarnsAboutAllMutatingDependencyWithoutProbe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deps.yaml")
	if err := os.WriteFile(path, []byte(`
dependencies:
  payments:
    tools: [charge_card, refund]
  crm:
    tools: [update_customer, get_customer]
  mail:
    tools: [send_mail]
    probe: {url: "https://mail.internal/healthz"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "lint", "-mutating", "charge_card,refund,update_customer,send_mail", path)
	if code != 0 {
		t.Fatalf("exit %d (a warning is not an error): %s %s", code, out, errOut)
	}
	if !strings.Contains(out, "warning: dependencies.payments.probe: every tool of this dependency is mutating (charge_card, refund)") {
		t.Errorf("no warning for payments:\n%s", out)
	}
	for _, dep := range []string{"crm", "mail"} {
		if strings.Contains(out, "dependencies."+dep+".probe") {
			t.Errorf("%s has a read-only tool or a probe, yet it is warned about:\n%s", dep, out)
		}
	}
	code, out, _ = runCmd(t, "lint", "-strict", "-mutating", "charge_card,refund", path)
	if code == 0 {
		t.Errorf("-strict: the warning fails the lint:\n%s", out)
	}
	_, out, _ = runCmd(t, "lint", path)
	if strings.Contains(out, ".probe") {
		t.Errorf("without -mutating nothing is known to be mutating:\n%s", out)
	}
}
