// Package openairoute builds adk-go's OpenAI-compatible model (model/openaimodel,
// the Responses API over openai-go) as a model failover route, in one line:
//
//	llm, err := openairoute.New(ctx, openairoute.Config{
//		Model:  "gpt-4.1",
//		Client: openaimodel.ClientConfig{APIKey: key, BaseURL: url},
//	})
//
// The model goes in a modelfailover.Route's LLM, or, with Config.Failover set, is
// the agent's own model under that Failover's callbacks. It differs from
// openaimodel.NewModel in two ways, both because the failover owns model retries:
//
//   - openai-go's own retries are off (option.WithMaxRetries(0), put after the
//     caller's options so it wins). By default openai-go sends a failing request
//     three times and sleeps between them on the system clock, the Retry-After
//     header's value uncapped: a 503 route received three requests per model call
//     and a 429 with "Retry-After: 40" held the turn 80 s.
//   - its HTTP client sends through modelfailover.NewTransport (or
//     Failover.Transport), so each attempt's status and headers reach the route's
//     breaker, the stated delay floors the route's reopen, the time bounds apply,
//     and any re-send within a failed attempt is refused in the process.
//
// A client built with openaimodel.NewModel directly and the package's transport
// still sends one request per attempt (the transport tells openai-go not to retry
// a failed answer and answers a failed send locally); New makes that the client's
// own setting as well. This package is the only agentbreaker package that links
// openai-go: agents that do not import it do not link it.
package openairoute
