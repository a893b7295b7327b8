// Package geminifake is a local HTTP server that speaks the Gemini API's
// generateContent and streamGenerateContent (server-sent events) methods, so an
// agent can be tested with the real genai client, and adk-go's model/gemini on top
// of it, against a model endpoint that fails on command.
//
// Point a client at it with [Server.ClientConfig]; any API key is accepted. Each
// Server stands for one endpoint (one model deployment in one region): start one
// per region to test failover between them.
//
// # Scripting
//
// Every request gets, in order of precedence: the next reply queued with
// [Server.Enqueue], the failure set with [Server.Fail] (until [Server.Recover]),
// or the default reply ([Config.Reply], [Server.SetReply]). A [Reply] is a text
// answer, a safety block, a blocked prompt, an empty "{}" answer or a [Failure]:
// an HTTP status with the JSON error body Google APIs send, optionally with a
// google.rpc.RetryInfo detail and a Retry-After header, and for streams after a
// number of chunks have gone out.
//
// A [Gate] holds a request at each step (before a whole answer, before each
// streamed chunk and before a stream's last event) until the test lets it go, so
// a test can observe an agent mid-request without sleeping.
//
// # Counting
//
// [Server.Requests] counts every HTTP request that reached the server, whatever
// its path; [Server.RequestsFor] counts the generate requests for one model; and
// [Server.Log] returns what each request asked for.
//
// # Concurrency
//
// A Server is safe for concurrent use: handlers run on the HTTP server's
// goroutines while the test changes the script. [Server.Close] releases every
// held request before shutting the server down.
package geminifake
