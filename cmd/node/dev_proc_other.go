//go:build !unix

package main

import "syscall"

// childProcAttr has nothing to set here: no process groups, no Pdeathsig.
func childProcAttr() *syscall.SysProcAttr { return nil }
