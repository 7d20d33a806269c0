//go:build unix

package proc

import "syscall"

// credential is u as the kernel takes it; nil runs as this process.
func (u *User) credential() *syscall.Credential {
	if u == nil {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
}
