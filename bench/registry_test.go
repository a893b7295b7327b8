package bench

// Registry lookup benchmarks.
//
// Reserved for the lead: BenchmarkRegistryLookup (and BenchmarkRegistryLookupParallel)
// will measure finding a dependency's breaker by key once package
// github.com/agentbreaker/agentbreaker/dependencymap exists. Nothing here guesses its
// API; add the benchmarks to this file, following the conventions of the others
// (b.ReportAllocs, `for b.Loop()` serially, b.RunParallel for the parallel form).
