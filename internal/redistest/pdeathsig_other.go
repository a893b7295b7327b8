//go:build !linux

package redistest

import "os/exec"

// setPdeathsig does nothing outside Linux: the test's cleanup kills the servers.
func setPdeathsig(*exec.Cmd) {}
