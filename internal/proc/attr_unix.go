//go:build unix && !linux

package proc

import "syscall"

// childAttr puts a child in a process group of its own, as whoever u
// names. There is no Pdeathsig here: a killed parent leaves its children
// running.
func childAttr(u *User) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: u.credential()}
}
