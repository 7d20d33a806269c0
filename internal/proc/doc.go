// Package proc starts and ends child processes, one way for all of
// raftcron: a child in a process group of its own, killed with its group,
// and on Linux SIGKILLed by the kernel when the thread that started it
// dies, however the parent dies.
//
// It has two users. Start launches raftcron's own children: `raftcron
// serve` nodes for localcluster (and through it `raftcron dev`, the
// benchmark harness and the multi-process tests), and the tests' `raftcron
// worker` processes, their output appended to a log file. Run runs one
// attempt of a command on this machine, for a node's executors
// (scheduler/dispatch) and for remote workers (package worker) alike, so
// that both end attempts the same way: the attempt's time limits and which
// outcome each means (WithLimit, Interrupted), the child in "/" unless
// told otherwise and as another user if asked, its output capped
// (MaxOutput), and the one-line detail every outcome carries (OneLine).
// Whatever an attempt starts ends with it, even what left its process
// group: each attempt runs in a cgroup v2 of its own where the process can
// make one (killed whole at the end), and elsewhere on Linux the process is
// a child subreaper that kills the attempt's orphans (Containment).
package proc
