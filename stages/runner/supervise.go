package runner

import (
	"context"
	"os/exec"
	"syscall"
)

// Command is a child process supervised as rlgate supervises every process
// it starts, a stage of rlgate run or the CMD of rlgate serve-policy: found
// by argv[0] on env's PATH (env is the child's whole environment; nil
// inherits rlgate's), sent SIGTERM when ctx ends and killed killGrace
// later if it has not exited, and stopped by the kernel if rlgate dies, so
// no child outlives the recorder unrecorded.
func Command(ctx context.Context, argv, env []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if p, ok := LookPathIn(env, argv[0]); ok {
		cmd.Path, cmd.Err = p, nil
	}
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = killGrace
	setDeathSignal(cmd)
	return cmd
}
