package configerr_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/internal/configerr"
)

func TestRelabel(t *testing.T) {
	t.Parallel()
	sentinel := errors.New("sentinel")
	inner := &agentbreaker.ConfigError{Package: "breaker", Field: "Policy.Window", Value: 3, Problem: "p", Err: sentinel}
	tests := []struct {
		name      string
		err       error
		from, to  string
		wantField string
	}{
		{"prefix replaced", inner, "Policy.", `Dependencies["crm"].Policy.`, `Dependencies["crm"].Policy.Window`},
		{"through a wrap", fmt.Errorf("x: %w", inner), "Policy.", "Default.", "Default.Window"},
		{"other prefix kept", inner, "Throttle.", "X.", "Policy.Window"},
		{"empty from prefixes", inner, "", "Models[0].", "Models[0].Policy.Window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ce *agentbreaker.ConfigError
			if !errors.As(configerr.Relabel(tt.err, "dependencymap", tt.from, tt.to), &ce) {
				t.Fatal("not a ConfigError")
			}
			if ce.Package != "dependencymap" || ce.Field != tt.wantField || ce.Value != 3 || !errors.Is(ce, sentinel) {
				t.Errorf("got %+v, want dependencymap %s", ce, tt.wantField)
			}
		})
	}
	plain := errors.New("plain")
	if got := configerr.Relabel(plain, "p", "", ""); got != plain {
		t.Errorf("Relabel(plain) = %v, want it unchanged", got)
	}
	if inner.Package != "breaker" {
		t.Error("Relabel changed the error it was given")
	}
}
