//go:build unix

package httptransport_test

import (
	"net"
	"syscall"
)

// waitReadable returns once bytes wait on the connection, without reading them, or
// when the connection's read deadline passes.
//
// It peeks before it waits: the bytes may have arrived before the wait began, and the
// poller's readiness event for them is then already spent (RawConn.Read resets it), so
// waiting for the next event without looking first would wait forever
// (TestResetBeforeReadingIsUnknown once hung for 8.5 minutes that way).
func waitReadable(tc *net.TCPConn) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	var b [1]byte
	_ = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		for err == syscall.EINTR {
			n, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		}
		// Done when a byte waits (n > 0), the peer closed (n == 0, no error) or the
		// socket failed; wait for the next readiness event only when nothing is there yet.
		return err != syscall.EAGAIN && err != syscall.EWOULDBLOCK || n > 0
	})
}
