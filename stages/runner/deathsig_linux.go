package runner

import (
	"os/exec"
	"syscall"
)

// setDeathSignal asks the kernel to stop the stage if rlgate dies, so a
// killed recorder does not leave an unrecorded trainer running.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
