//go:build !unix

package proc

import "syscall"

// childAttr has nothing to set here: no process groups, no Pdeathsig.
func childAttr() *syscall.SysProcAttr { return nil }
