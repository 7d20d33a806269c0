package dispatch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"time"

	"github.com/raftcron/raftcron/fence"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	// defaultPath is used when the node itself has no PATH.
	defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// waitDelay bounds the wait for the output pipes after the child has
	// exited or been killed: a process that escaped the group (setsid) can
	// hold them open forever.
	waitDelay = 2 * time.Second
)

// ExecExecutor runs attempts with an exec target as a child process of the
// node. It is safe for concurrent use.
//
// The child's environment is deliberately small: PATH and HOME inherited
// from the node (so that commands resolve and tools find their dotfiles),
// then the target's env, then the RAFTCRON_* variables. Nothing else of the
// node's environment leaks in: it may hold the node's own secrets.
type ExecExecutor struct {
	path, home string
}

// NewExecExecutor returns an executor whose children inherit the node's
// current PATH and HOME.
func NewExecExecutor() *ExecExecutor {
	e := &ExecExecutor{path: os.Getenv("PATH"), home: os.Getenv("HOME")}
	if e.path == "" {
		e.path = defaultPath
	}
	return e
}

// Execute runs the command and waits for it. Exit status 0 succeeds, any
// other fails; on the job deadline, the target timeout or cancellation of
// ctx the child's whole process group is killed and reaped before Execute
// returns.
func (e *ExecExecutor) Execute(ctx context.Context, a Attempt) Outcome {
	if ctx == nil {
		ctx = context.Background()
	}
	out := Outcome{StartedAt: time.Now()}
	t := a.Exec
	if t == nil {
		return finish(out, pb.RunState_RUN_STATE_FAILED, "no exec target")
	}
	if len(t.GetCommand()) == 0 || t.GetCommand()[0] == "" {
		return finish(out, pb.RunState_RUN_STATE_FAILED, "exec: empty command")
	}
	if err := checkDir(t.GetDir()); err != nil {
		return finish(out, pb.RunState_RUN_STATE_FAILED, err.Error())
	}
	if state, detail, ok := interrupted(ctx, ctx); ok {
		return finish(out, state, detail)
	}
	deadline, timeout := a.limits()
	lctx, cancel := withLimit(ctx, deadline, timeout)
	defer cancel()
	return e.run(ctx, lctx, a, out)
}

// checkDir catches a bad working directory up front: a failed chdir in the
// child is reported as "fork/exec <command>: no such file or directory",
// which blames the command.
func checkDir(dir string) error {
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

// run starts the child and waits for it on one goroutine locked to its OS
// thread for the child's whole life: Pdeathsig is tied to the thread that
// forked the child (see setProcAttr). The lock is released only after the
// child has been reaped.
func (e *ExecExecutor) run(parent, ctx context.Context, a Attempt, out Outcome) Outcome {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	t := a.Exec
	cmd := exec.CommandContext(ctx, t.Command[0], t.Command[1:]...)
	cmd.Env = e.environ(a)
	cmd.Dir = t.GetDir()
	var output headBuffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	setProcAttr(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = waitDelay

	if err := cmd.Start(); err != nil {
		if state, detail, ok := interrupted(parent, ctx); ok {
			return finish(out, state, detail)
		}
		return finish(out, pb.RunState_RUN_STATE_FAILED, err.Error())
	}
	// Whether the context was done when the child ended decides whether the
	// context may be blamed for how it ended; a cancel arriving after the
	// exit must not relabel a finished run.
	exited := endGroup(cmd)
	interruptedAtExit := ctx.Err() != nil
	err := cmd.Wait()
	out.FinishedAt = time.Now()
	out.Output = output.Bytes()
	if !exited {
		interruptedAtExit = ctx.Err() != nil
	}
	state, detail := classifyExit(parent, ctx, interruptedAtExit, cmd.ProcessState, err)
	return finish(out, state, detail)
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
			detail += "; output left open by an escaped process, closed after " + waitDelay.String()
		}
		return pb.RunState_RUN_STATE_SUCCEEDED, detail
	}
	if interruptedAtExit {
		if state, detail, ok := interrupted(parent, ctx); ok {
			return state, detail
		}
	}
	if ps != nil {
		return pb.RunState_RUN_STATE_FAILED, ps.String()
	}
	return pb.RunState_RUN_STATE_FAILED, "exec: wait: " + err.Error()
}

// environ builds the child's environment. Later entries win on duplicate
// keys (os/exec keeps the last), so the RAFTCRON_* values cannot be
// overridden by the job's env.
func (e *ExecExecutor) environ(a Attempt) []string {
	env := []string{"PATH=" + e.path}
	if e.home != "" {
		env = append(env, "HOME="+e.home)
	}
	jobEnv := a.Exec.GetEnv()
	for _, k := range slices.Sorted(maps.Keys(jobEnv)) {
		env = append(env, k+"="+jobEnv[k])
	}
	return append(env,
		fence.EnvFencingToken+"="+a.token(),
		fence.EnvJob+"="+a.Job,
		fence.EnvRunID+"="+a.RunID,
		fence.EnvScheduledAt+"="+a.scheduledAt(),
		fence.EnvAttempt+"="+a.number(),
		fence.EnvIdempotencyKey+"="+a.IdempotencyKey(),
	)
}
