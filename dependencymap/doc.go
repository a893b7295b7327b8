// Package dependencymap keeps one circuit breaker per dependency and answers, on the
// hot path, which breaker guards a tool, a host or a model endpoint.
//
// Breakers are keyed by dependency, not by tool: lookup_customer and update_customer
// both talk to the CRM, so they are annotated with the key "crm" and trip together. A
// tool with no annotation gets a breaker of its own, named after it (configurable: one
// shared key, or no breaker at all). Model endpoints get one breaker per model and
// region, keyed "model@region", with their own, more conservative default policy: a
// model breaker that trips easily silently demotes traffic to a weaker model.
//
// Each dependency may override any field of the default policy; a policy version string
// travels with every event. Configuration comes from code ([Config]) or from a YAML or
// JSON file (package dependencymap/depfile, apart so that code-only users compile no
// YAML parser); every invalid value is rejected with an error that names the field,
// the dependency and the value.
//
// Tools that are only known at run time, such as the tools an MCP server lists, are
// bound to a key with [Map.AddTools] (package mcpguard does it for MCP tool sets); they
// then share the key's breaker as if the configuration had listed them.
//
// Lookups take no lock: the maps are immutable snapshots behind an atomic pointer,
// replaced copy-on-write when an unannotated tool or a new model endpoint first shows up.
package dependencymap
