package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// setProcAttr puts the child in a process group of its own, so that the
// whole tree it starts can be killed with one signal, and asks the kernel to
// SIGKILL it when its parent dies (a node killed with SIGKILL leaves no
// orphan running the job).
//
// Pdeathsig fires when the parent *thread* exits, not the process
// (prctl(2), golang/go#27505). The Go runtime terminates a thread when a
// goroutine locked to it exits; if such a goroutine ever ran on the thread
// that forked the child, the child would be killed in mid-run. The caller
// therefore starts and waits for the child from a goroutine locked to its
// thread (see Run): no other goroutine can run on that thread, so nothing
// can end it while the child lives.
func setProcAttr(cmd *exec.Cmd, u *User) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: u.credential(),
	}
	return nil
}

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
