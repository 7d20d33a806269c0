package main

import "syscall"

// childProcAttr puts a node in a process group of its own, so that the
// terminal's Ctrl-C reaches dev alone and dev stops the nodes in order, and
// has the kernel SIGKILL it when dev dies, so that even `kill -9` of dev
// leaves no node running. See devNode.start for the thread Pdeathsig needs.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
