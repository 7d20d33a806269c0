package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Process is one started child. Its methods are safe for concurrent use.
type Process struct {
	cmd *exec.Cmd
	pid int
	// done is closed once the child has exited and been reaped; waitErr is
	// written before, so it may be read after <-done.
	done    chan struct{}
	waitErr error
}

// LogHeader starts the line Start writes into the log before each child's
// output: when it started and its command line, so that a log appended to
// by restarts says where each begins.
const LogHeader = "---- "

// Start starts cmd with its stdout and stderr appended to logPath (created
// if need be), after a LogHeader line, in a process group of its own, so that a terminal's Ctrl-C
// reaches the launcher alone and it can stop its children in order; on
// Linux the kernel SIGKILLs the child when the launcher dies. cmd must not
// have been started; Start sets its output and SysProcAttr.
//
// The child is started and waited for by a goroutine locked to its OS
// thread: Pdeathsig fires when the thread that forked the child ends, not
// the process (golang/go#27505), and a locked thread runs nothing else, so
// only the child's exit or the launcher's death can end it.
func Start(cmd *exec.Cmd, logPath string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	header := fmt.Sprintf("%s%s start: %s\n", LogHeader, time.Now().UTC().Format(time.RFC3339Nano), strings.Join(cmd.Args, " "))
	if _, err := logFile.WriteString(header); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("log file: %w", err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		defer func() { _ = logFile.Close() }()
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.SysProcAttr = childAttr(nil)
		if err := startLaunched(cmd); err != nil {
			started <- fmt.Errorf("start %s: %w", cmd.Path, err)
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		p.waitErr = cmd.Wait()
		forgetLaunched(p.pid)
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Pid is the child's process ID.
func (p *Process) Pid() int { return p.pid }

// Done is closed once the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the child has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the child. A child already reaped is not signalled
// (os.Process knows, so the pid cannot be a stranger's): the error says so.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Wait waits up to d for the child to exit and reports whether it has.
func (p *Process) Wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// Kill sends SIGKILL and waits up to d for the child to be reaped; it
// reports whether it was.
func (p *Process) Kill(d time.Duration) bool {
	_ = p.Signal(syscall.SIGKILL)
	return p.Wait(d)
}

// Stop asks the child to stop (SIGTERM), waits up to d, then kills it and
// waits up to d again; it reports whether the child was reaped.
func (p *Process) Stop(d time.Duration) bool {
	_ = p.Signal(syscall.SIGTERM)
	return p.Wait(d) || p.Kill(d)
}

// Err is how the child ended, as exec.Cmd.Wait reports it (nil: exit
// status 0); call it only after Done.
func (p *Process) Err() error { return p.waitErr }

// ExitCode is the child's exit status, -1 if a signal ended it; call it
// only after Done.
func (p *Process) ExitCode() int { return p.cmd.ProcessState.ExitCode() }

// Killed reports whether a signal ended the child; call it only after Done.
func (p *Process) Killed() bool {
	var exitErr *exec.ExitError
	return errors.As(p.waitErr, &exitErr) && exitErr.ExitCode() == -1
}

// ExitReason is how the child ended, as Go spells it ("signal: killed",
// "exit status 1"); call it only after Done.
func (p *Process) ExitReason() string {
	if p.waitErr == nil {
		return "exit status 0"
	}
	return p.waitErr.Error()
}

// EnvPrefix starts every environment variable raftcron reads.
const EnvPrefix = "RAFTCRON_"

// Environ is this process's environment without RAFTCRON_* settings, so
// that whoever runs the launcher cannot change what its children do.
func Environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvPrefix) {
			env = append(env, kv)
		}
	}
	return env
}
