package redistest

import (
	"os/exec"
	"syscall"
)

// setPdeathsig kills the server if the test binary dies without running its cleanups
// (a timeout's panic, a SIGKILL), so no redis-server outlives the tests.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
