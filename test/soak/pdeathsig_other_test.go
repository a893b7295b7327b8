//go:build !linux

package soak

import "os/exec"

// setPdeathsig does nothing outside Linux: the test's cleanups kill the children.
func setPdeathsig(*exec.Cmd) {}
