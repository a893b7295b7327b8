// Package depfile loads a dependency map's configuration from a file an operator
// writes, in YAML or JSON with the same field names: [Load] reads one, [ParseYAML] and
// [ParseJSON] parse bytes, and each returns a [dependencymap.Config] checked
// completely (it builds a Map without error). Unknown fields are errors, so a typo
// never silently falls back to a default; durations are Go duration strings ("30s");
// [Off] switches off, for one dependency, a gate its default policy turns on.
//
// A file with problems gives an [*Error] listing every one of them, each in the file's
// own terms: the key's path as written (dependencies.crm.policy.window; a value a
// dependency inherits from the top-level default is named default.x), its line and
// column, the value and what is wrong. [Read] returns the whole [Document] (what was
// decoded, the problems, where each key is) for tools that report on a file, such as
// agentbreaker lint.
//
// The loader is a package of its own so that a program that configures its breakers
// in code does not compile a YAML parser. Its errors start with "dependencymap: ",
// like the Map's own, since they describe a dependency map's configuration.
package depfile
