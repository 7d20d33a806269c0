//go:build unix

package dispatch

import "syscall"

// credential is the SysProcAttr form of u; nil keeps the node's own ids.
func credential(u *User) *syscall.Credential {
	if u == nil {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
}
