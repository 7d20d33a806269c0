package localcluster

import (
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/raftcron/raftcron/internal/proc"
)

// live holds every node process started and not yet reaped, whatever
// cluster started it, so that KillAll can end them however a program ends
// (an error, a panic, a signal).
var live = struct {
	sync.Mutex
	procs map[*proc.Process]struct{}
}{procs: make(map[*proc.Process]struct{})}

// startTracked starts cmd with its output appended to logPath and
// registers it until it has been reaped.
func startTracked(cmd *exec.Cmd, logPath string) (*proc.Process, error) {
	live.Lock()
	defer live.Unlock()
	p, err := proc.Start(cmd, logPath)
	if err != nil {
		return nil, err
	}
	live.procs[p] = struct{}{}
	go func() {
		<-p.Done()
		live.Lock()
		delete(live.procs, p)
		live.Unlock()
	}()
	return p, nil
}

// KillAll sends SIGKILL to every node process still running, of every
// cluster, and waits (bounded) until each is reaped. It returns how many
// it had to kill: a process reaped a moment ago, whose registration has
// not gone yet, is not one.
func KillAll() int {
	live.Lock()
	procs := make([]*proc.Process, 0, len(live.procs))
	for p := range live.procs {
		if p.Exited() {
			continue
		}
		_ = p.Signal(syscall.SIGKILL)
		procs = append(procs, p)
	}
	live.Unlock()
	deadline := time.After(KillTimeout)
	for _, p := range procs {
		select {
		case <-p.Done():
		case <-deadline:
			return len(procs)
		}
	}
	return len(procs)
}

// LiveCount is the number of node processes not yet reaped.
func LiveCount() int {
	live.Lock()
	defer live.Unlock()
	n := 0
	for p := range live.procs {
		if !p.Exited() {
			n++
		}
	}
	return n
}
