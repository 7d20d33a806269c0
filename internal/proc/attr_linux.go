package proc

import "syscall"

// childAttr: a process group of its own, and SIGKILL when the launcher dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
