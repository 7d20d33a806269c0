//go:build unix && !linux

package proc

import "syscall"

// childAttr: a process group of its own. There is no Pdeathsig here: a
// killed launcher leaves its children running.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
