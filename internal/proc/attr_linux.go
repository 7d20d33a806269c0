package proc

import "syscall"

// childAttr puts a child in a process group of its own, so that the whole
// tree it starts can be killed with one signal (and a terminal's Ctrl-C
// reaches the launcher alone), and asks the kernel to SIGKILL it when its
// parent dies: a node or launcher killed with SIGKILL leaves no orphan.
// With a user, the child runs with that user's ids and groups; Go sets
// Pdeathsig after switching them, so the switch does not clear it.
//
// Pdeathsig fires when the parent *thread* exits, not the process
// (prctl(2), golang/go#27505). The Go runtime terminates a thread when a
// goroutine locked to it exits; if such a goroutine ever ran on the thread
// that forked the child, the child would be killed in mid-run. Start and
// Run therefore start and wait for the child from a goroutine locked to
// its thread: no other goroutine can run on that thread, so nothing can
// end it while the child lives.
func childAttr(u *User) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: u.credential()}
}
