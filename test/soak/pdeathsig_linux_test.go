package soak

import (
	"os/exec"
	"syscall"
)

// setPdeathsig kills a child (the world, a redis-server) if the test binary dies
// without running its cleanups.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
