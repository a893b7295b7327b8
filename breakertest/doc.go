// Package breakertest helps test agents built on adk-go against failing dependencies,
// without a network or a real model.
//
// It has three parts, each usable alone:
//
//   - [Model] is a model.LLM that answers from a script, step by step or by reacting
//     to the request, and keeps a deep copy of every request it received: the
//     conversation, the tool names and the tool declarations with their descriptions
//     exactly as the model saw them.
//   - [Server] is a local HTTP dependency on 127.0.0.1 that fails on command (status
//     codes, Retry-After, hanging until released, dropping the connection) and counts
//     every request that reached it, so a test can assert how much load a failing
//     dependency really received. [NewHTTPTool] is a real tool that calls it.
//   - [Harness] runs turns through adk-go's real runner with an in-memory session store
//     and the plugins under test.
//
// Nothing here sleeps or depends on wall-clock time; combine it with clock.NewFake for
// breakers and testing/synctest for timeouts.
package breakertest
