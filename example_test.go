package agentbreaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/breaker"
)

// Every package reports bad configuration as one type, so one errors.As finds it.
func ExampleConfigError() {
	_, err := breaker.New(breaker.Config{Name: "crm", Policy: breaker.Policy{Window: -time.Second}})
	var ce *agentbreaker.ConfigError
	if errors.As(err, &ce) {
		fmt.Println(ce.Package, ce.Field, ce.Value)
	}
	// Output: breaker Policy.Window -1s
}
