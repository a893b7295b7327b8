// Package bench compares the hot paths of agentbreaker's circuit breaker with two peer
// libraries, github.com/sony/gobreaker/v2 and github.com/failsafe-go/failsafe-go, all
// configured with the same gates: trip at a 50% failure rate over at least 20 calls in a
// 60s rolling window (10 buckets), stay open 30s, then let one probe through.
//
// It measures, each serially and under b.RunParallel, with allocations reported:
//
//   - BenchmarkClosed*: a call admitted and reported successful in the closed state;
//   - BenchmarkOpen*: a call rejected by a breaker that tripped open on failures;
//   - BenchmarkHalfOpen*: a call rejected because the half-open probe is in flight;
//   - BenchmarkBaseline*: a bare function call and one shared atomic add, for scale.
//
// The package holds only benchmarks. It is a module of its own (its go.mod replaces
// github.com/agentbreaker/agentbreaker with the parent directory) so that the peer
// libraries appear in this module's requirements only: users of agentbreaker never
// download them, and the library's go.mod stays free of them.
//
// Run every benchmark ten times and summarise with benchstat:
//
//	./bench/run.sh
//
// or by hand, from this directory:
//
//	go test -run '^$' -bench . -benchmem -count 10 ./... | tee results.txt
//	benchstat results.txt
//
// Run one benchmark process at a time and keep the machine otherwise quiet: the
// parallel benchmarks use every CPU that GOMAXPROCS allows.
package bench
