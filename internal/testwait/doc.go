// Package testwait bounds the waits of tests: a receive that never comes fails the test
// and says what it waited for, instead of hanging until go test's -timeout (ten minutes
// by default, and CI's time limit before that).
//
// The bound is generous (Bound): it is there to turn a lost wake-up into a failure, not
// to time anything, so a test never depends on it being reached or not on a busy machine.
package testwait
