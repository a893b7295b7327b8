//go:build !unix

package httptransport_test

import "net"

// waitReadable returns once the poller reports the connection readable, or when the
// connection's read deadline passes. Without a peek (unix only) it may wait for bytes
// that arrived already, until the deadline; it never waits longer.
func waitReadable(tc *net.TCPConn) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	first := true
	_ = rc.Read(func(uintptr) bool {
		if first {
			first = false
			return false
		}
		return true
	})
}
