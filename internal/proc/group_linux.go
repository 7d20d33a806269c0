package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// killGroup kills the child's whole process group (its pgid is its pid).
func killGroup(cmd *exec.Cmd) error {
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// endGroup waits for the child to exit *without reaping it* and then kills
// what is left of its process group: the run is over when its process exits,
// and background processes it left behind must not outlive it (nor hold its
// output pipe open). While the child is an unreaped zombie its pid, and so
// the group id, cannot be reused, so the signal cannot hit a stranger.
// It reports whether it saw the child exit.
func endGroup(cmd *exec.Cmd) (exited bool) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return true
		}
		if err != unix.EINTR {
			return false
		}
	}
}
