package harness

import (
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// live holds every child process started and not yet reaped, so that
// KillAll can end them however a scenario ended (error, panic, signal).
var live = struct {
	sync.Mutex
	procs map[*exec.Cmd]chan struct{}
}{procs: make(map[*exec.Cmd]chan struct{})}

// startTracked starts cmd, registers it, and closes exited once it has been
// reaped.
func startTracked(cmd *exec.Cmd, exited chan struct{}) error {
	live.Lock()
	defer live.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	live.procs[cmd] = exited
	go func() {
		_ = cmd.Wait()
		live.Lock()
		delete(live.procs, cmd)
		live.Unlock()
		close(exited)
	}()
	return nil
}

// KillAll sends SIGKILL to every child process still running and waits
// (bounded) until each is reaped. It returns how many it had to kill.
func KillAll() int {
	live.Lock()
	waits := make([]chan struct{}, 0, len(live.procs))
	for cmd, exited := range live.procs {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		waits = append(waits, exited)
	}
	live.Unlock()
	deadline := time.After(exitTimeout)
	for _, w := range waits {
		select {
		case <-w:
		case <-deadline:
			return len(waits)
		}
	}
	return len(waits)
}

// LiveCount is the number of child processes not yet reaped.
func LiveCount() int {
	live.Lock()
	defer live.Unlock()
	return len(live.procs)
}
