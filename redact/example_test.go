package redact_test

import (
	"fmt"

	"github.com/agentbreaker/agentbreaker/redact"
)

func Example() {
	body := "FATAL: password authentication failed: postgres://app:hunter2@db:5432/orders\x1b[0m"
	// What operators see by default: the length and a short hash, never the text.
	fmt.Println(redact.Of(body).Len)
	// What an operator who opted in sees: bounded, cleaned, secrets masked.
	fmt.Println(redact.Excerpt(body, 120))
	// Names are checked where they enter.
	fmt.Println(redact.CheckName("Dependencies key", "crm\xff"))
	// Output:
	// 80
	// FATAL: password authentication failed: postgres://app:[REDACTED]@db:5432/orders [0m
	// redact: Dependencies key = "crm\xff": is not valid UTF-8
}
