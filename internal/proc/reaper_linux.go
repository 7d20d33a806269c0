package proc

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Where no cgroup can be made, the process is a child subreaper
// (PR_SET_CHILD_SUBREAPER): a process that leaves its run's process group
// and loses its parent (setsid and a double fork: a daemon) is re-parented
// to this process rather than to init, so it can still be found and ended.
// Which run such an orphan came from is told by its environment, which it
// inherited: each run has a mark, an entry of its environment no other run
// has (its fencing token). When a run ends, every orphan carrying its mark
// is killed and reaped, and so is every orphan that carries no live run's
// mark (its environment cleared, unreadable, or a zombie): what nobody
// claims is a leftover. Killing an orphan re-parents its children to this
// process in turn, so the sweep goes round until nothing is left.
//
// Children this process started itself are never taken for orphans: those
// of Start and Run are registered (under mu, across the fork, so that no
// sweep sees one before it is), and any other child in this process's own
// process group is left alone. A process that runs attempts in this mode
// must start its other children through Start, or in its own group.

// sweepTimeout bounds one run's sweep.
const sweepTimeout = 2 * time.Second

// reaper is the process-wide state of subreaper mode.
type reaper struct {
	mu      sync.Mutex // serialises starts and sweeps: a sweep must not see a child between fork and registration
	started map[int]bool
	marks   map[string]int // the marks of live runs, counted
}

var theReaper = &reaper{started: map[int]bool{}, marks: map[string]int{}}

// becomeSubreaper makes this process the reaper of its orphaned descendants.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// start starts cmd and registers it (and mark, while the run lives) so that
// no sweep takes it for an orphan.
func (r *reaper) start(cmd *exec.Cmd, mark string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	r.started[cmd.Process.Pid] = true
	if mark != "" {
		r.marks[mark]++
	}
	return nil
}

// forget unregisters a child once it is reaped, and its run's mark.
func (r *reaper) forget(pid int, mark string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.started, pid)
	if mark == "" {
		return
	}
	if r.marks[mark]--; r.marks[mark] <= 0 {
		delete(r.marks, mark)
	}
}

// sweep kills and reaps the orphans of the run marked mark, and those no
// live run claims, until none is left or sweepTimeout passes.
func (r *reaper) sweep(mark string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	deadline := time.Now().Add(sweepTimeout)
	for time.Now().Before(deadline) {
		victims := r.leftovers(mark)
		if len(victims) == 0 {
			return
		}
		for _, pid := range victims {
			// An unreaped child's pid cannot be reused: the signal reaches it.
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range victims {
			reap(pid, deadline)
		}
	}
}

// leftovers are this process's children that no run or launcher of its own
// started and that mark's run, or no live run, claims.
func (r *reaper) leftovers(mark string) []int {
	self, ownGroup := os.Getpid(), syscall.Getpgrp()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || r.started[pid] {
			continue
		}
		ppid, pgid, ok := parentAndGroup(pid)
		if !ok || ppid != self || pgid == ownGroup {
			continue
		}
		if owner := r.claim(pid); owner == "" || owner == mark {
			out = append(out, pid)
		}
	}
	return out
}

// claim is the mark of the live run whose mark pid's environment carries,
// "" if none does (or the environment cannot be read).
func (r *reaper) claim(pid int) string {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		if _, live := r.marks[string(kv)]; live {
			return string(kv)
		}
	}
	return ""
}

// parentAndGroup reads a process's parent and process group from
// /proc/<pid>/stat: "pid (comm) state ppid pgrp ...", comm possibly holding
// spaces and parentheses.
func parentAndGroup(pid int) (ppid, pgid int, ok bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(fields[1]))
	pgid, err2 := strconv.Atoi(string(fields[2]))
	return ppid, pgid, err1 == nil && err2 == nil
}

// reap waits (bounded) for a killed child to exit and reaps it.
func reap(pid int, deadline time.Time) {
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 10*time.Millisecond) {
		got, err := unix.Wait4(pid, nil, unix.WNOHANG, nil)
		if got == pid || (err != nil && err != unix.EINTR) || time.Now().After(deadline) {
			return
		}
		time.Sleep(wait)
	}
}
