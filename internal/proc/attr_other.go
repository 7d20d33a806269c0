//go:build !unix

package proc

import "syscall"

// childAttr has nothing to set here: no process groups, no Pdeathsig, and
// no switching users (a node and a worker refuse an exec user where they
// do not run as root, which is everywhere here).
func childAttr(*User) *syscall.SysProcAttr { return nil }
