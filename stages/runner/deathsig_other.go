//go:build !linux

package runner

import "os/exec"

// setDeathSignal has no portable equivalent outside Linux.
func setDeathSignal(*exec.Cmd) {}
