// Package proc runs one attempt on this machine, for the node's executors
// (scheduler/dispatch) and for remote workers (package worker) alike, so
// that both end attempts the same way: the attempt's time limits and which
// outcome each one means, the child process of a command (a process group
// of its own, killed with the group on deadline or cancel, SIGKILLed by the
// kernel when the thread that started it dies, its output capped), and the
// one-line detail every outcome carries. See scheduler/dispatch's package
// documentation for the limits of Pdeathsig.
package proc
