//go:build unix && !linux

package main

import "syscall"

// childProcAttr puts a node in a process group of its own, so that the
// terminal's Ctrl-C reaches dev alone and dev stops the nodes in order.
// There is no Pdeathsig here: `kill -9` of dev leaves its nodes running.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
