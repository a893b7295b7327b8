package adaptivelimit_test

import (
	"errors"
	"testing"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/adaptivelimit"
)

// SetConfig moves the bounds of a running limiter, brings the limit within them, and
// refuses a bad value whole.
func TestSetConfigMovesTheBounds(t *testing.T) {
	l := adaptivelimit.MustNew(adaptivelimit.Config{Name: "crm", MinLimit: 2, MaxLimit: 100, InitialLimit: 50})
	if err := l.SetConfig(adaptivelimit.Config{MinLimit: 5, MaxLimit: 10, Tolerance: 1}); err != nil {
		t.Fatal(err)
	}
	if lo, hi := l.Bounds(); lo != 5 || hi != 10 || l.Limit() != 10 || l.Config().Tolerance != 1 || l.Name() != "crm" {
		t.Errorf("bounds %d..%d, limit %d, config %+v: want 5..10, the limit cut to 10", lo, hi, l.Limit(), l.Config())
	}
	var ce *agentbreaker.ConfigError
	if err := l.SetConfig(adaptivelimit.Config{MinLimit: 20, MaxLimit: 10}); !errors.As(err, &ce) || ce.Field != "MinLimit" {
		t.Errorf("SetConfig with MinLimit above MaxLimit: %v, want a ConfigError naming MinLimit", err)
	}
	if lo, hi := l.Bounds(); lo != 5 || hi != 10 {
		t.Errorf("a refused SetConfig moved the bounds to %d..%d", lo, hi)
	}
}
