package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// WaitDelay bounds the wait for the output pipes after the child has exited
// or been killed: a process that escaped the group (setsid) can hold them
// open forever.
const WaitDelay = 2 * time.Second

// Command is a child process to run for one attempt.
type Command struct {
	Argv []string
	// Env is the child's whole environment; nothing else is inherited.
	Env []string
	// Dir is the working directory; empty means "/", not the caller's.
	Dir string
	// User runs the child as another user (the caller needs the right to);
	// nil runs it as the caller.
	User *User
	// Mark is an entry of Env ("KEY=VALUE") that no other run has at the
	// same time, such as its fencing token: where this process is a
	// subreaper (Containment), it tells this run's orphans from other runs'.
	Mark string
}

// Result is how a child ended.
type Result struct {
	State      pb.RunState // SUCCEEDED, FAILED, DEADLINE_EXCEEDED or CANCELLED
	Detail     string      // one line (OneLine)
	Output     []byte      // the first MaxOutput bytes of stdout and stderr together
	FinishedAt time.Time
}

// CheckDir catches a bad working directory up front: a failed chdir in the
// child is reported as "fork/exec <command>: no such file or directory",
// which blames the command.
func CheckDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("dir %s: not a directory", dir)
	}
	return nil
}

// Run starts c and waits for it. parent is the attempt's context, ctx the
// same bounded by its limits (WithLimit): exit status 0 succeeds, any other
// fails, and when ctx ends first the child's whole process group is killed
// and reaped before Run returns, the outcome saying why (Interrupted).
// However the run ends, every process it started is killed too, those that
// left its process group included: its cgroup, or its orphans where this
// process is a subreaper (Containment).
//
// The child is started and waited for on one goroutine locked to its OS
// thread for the child's whole life, because Pdeathsig is tied to the
// thread that forked the child (see childAttr); the lock is released only
// after the child has been reaped.
func Run(parent, ctx context.Context, c Command) Result {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Env = c.Env
	cmd.Dir = c.Dir
	if cmd.Dir == "" {
		cmd.Dir = "/"
	}
	var output headBuffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	cmd.SysProcAttr = childAttr(c.User)
	box := openBox(c.Mark)
	defer box.close()
	cmd.Cancel = func() error {
		box.kill()
		return killGroup(cmd)
	}
	cmd.WaitDelay = WaitDelay

	if err := box.start(cmd); err != nil {
		if state, detail, ok := Interrupted(parent, ctx); ok {
			return ended(state, detail, nil)
		}
		return ended(pb.RunState_RUN_STATE_FAILED, err.Error(), nil)
	}
	// Whether the context was done when the child ended decides whether the
	// context may be blamed for how it ended; a cancel arriving after the
	// exit must not relabel a finished run.
	exited := endGroup(cmd)
	interruptedAtExit := ctx.Err() != nil
	box.kill() // what left the group: so that it lets go of the output too
	err := cmd.Wait()
	if !exited {
		interruptedAtExit = ctx.Err() != nil
	}
	state, detail := classifyExit(parent, ctx, interruptedAtExit, cmd.ProcessState, err)
	return ended(state, detail, output.Bytes())
}

func ended(state pb.RunState, detail string, output []byte) Result {
	return Result{State: state, Detail: OneLine(detail), Output: output, FinishedAt: time.Now()}
}

// classifyExit decides an attempt's state from how its process ended. A
// clean exit 0 is a success even if a limit ran out meanwhile (it had
// finished); any other ending while the context was done is blamed on the
// context, because the kill (or its effect on the child's children) may be
// what made it fail.
func classifyExit(parent, ctx context.Context, interruptedAtExit bool, ps *os.ProcessState, err error) (pb.RunState, string) {
	if ps != nil && ps.Exited() && ps.ExitCode() == 0 {
		detail := "exit status 0"
		if errors.Is(err, exec.ErrWaitDelay) {
			detail += "; output left open by an escaped process, closed after " + WaitDelay.String()
		}
		return pb.RunState_RUN_STATE_SUCCEEDED, detail
	}
	if interruptedAtExit {
		if state, detail, ok := Interrupted(parent, ctx); ok {
			return state, detail
		}
	}
	if ps != nil {
		return pb.RunState_RUN_STATE_FAILED, ps.String()
	}
	return pb.RunState_RUN_STATE_FAILED, "exec: wait: " + err.Error()
}
