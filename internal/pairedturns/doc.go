// Package pairedturns measures what one way of running adk-go turns costs over another,
// by alternating turns of the two in one benchmark loop: the machine's drift over a run
// (other processes, frequency changes) then falls on both alike, where two separate
// benchmarks minutes apart differ by more than the few percent being measured. The
// plugin's overhead benchmarks (callbacks, mcpguard) share it.
package pairedturns
