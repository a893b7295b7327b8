// Package mcptest is the MCP server the tests of agentbreaker's MCP guard share: a
// real server from the official MCP Go SDK with a payment tool (charge_card, which
// has a side effect) and a read-only one (get_order), whose answers a test scripts
// per tool; served over streamable HTTP on a local socket (with the faults a network
// has: down, hang, a graceful close after accepting a request) or over stdio by the
// test binary itself run as a child process. No library code imports it.
package mcptest
