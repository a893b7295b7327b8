package openaifake_test

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/agentbreaker/agentbreaker/breakertest/openaifake"
)

// A server that fails with 429 and a stated delay, asked by a plain HTTP client:
// it answers, and counts what reached it.
func Example() {
	s := openaifake.MustNew(openaifake.Config{Name: "openai"})
	defer s.Close()
	_ = s.Fail(openaifake.Failure{Code: 429, RetryAfter: "40"})
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"responses", strings.NewReader(`{"model":"gpt-4.1"}`))
	req.Header.Set("X-Stainless-Retry-Count", "0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), s.Requests(), s.RetryCounts())
	s.Recover()
	resp, err = http.Post(s.URL()+"responses", "application/json", strings.NewReader(`{"model":"gpt-4.1"}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, s.Requests())
	fmt.Println(s.Fail(openaifake.Failure{Code: 200}))
	// Output:
	// 429 40 1 [0]
	// 200 2
	// openaifake: invalid value: Failure.Code 200: want 400 to 599 (or Abort, Hang)
}
