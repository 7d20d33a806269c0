//go:build unix && !linux

package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// killGroup kills the child's whole process group (its pgid is its pid).
func killGroup(cmd *exec.Cmd) error {
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// endGroup does nothing here: without waitid(WNOWAIT) the group could only
// be killed after the child is reaped, when its id may already be reused.
func endGroup(*exec.Cmd) (exited bool) { return false }
