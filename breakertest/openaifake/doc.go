// Package openaifake is a local OpenAI Responses API endpoint for tests: the API
// that adk-go's model/openaimodel speaks over openai-go, served on 127.0.0.1 by
// net/http, answering POST /responses as JSON or as server-sent events. It counts
// every request that reaches it, with the X-Stainless-Retry-Count each carried, so
// a test sees what an SDK's own retries sent.
//
// A test scripts it with [Server.Fail] (an error status with Retry-After or
// Retry-After-Ms, a connection cut, a hang until the client gives up) and
// [Server.Filter] (an "incomplete" answer stopped by a content filter, with or
// without output). It imports no SDK, so any OpenAI-compatible client can be tested
// against it. A Server is safe for concurrent use.
package openaifake
