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

// waitDelay bounds the wait for the output pipes after the child has exited or been
// killed: a process that escaped the group (setsid) can hold them open forever.
const waitDelay = 2 * time.Second

// defaultDir is where a child starts unless its target names a dir: the node's own
// working directory is no business of the job's.
const defaultDir = "/"

// ExecConfig is the node's policy for exec attempts. The zero value runs nothing.
type ExecConfig struct {
	// Allow decides which programs may run (policy.Exec, from --exec-allow). Nil
	// allows none: exec is opt-in.
	Allow CommandPolicy
	// User, if set, is whom children run as (--exec-user; the node must be root).
	User *User
	// Signer, if set, signs every attempt into RAFTCRON_SIGNATURE.
	Signer Signer
}

// ExecExecutor runs attempts with an exec target as a child process of the
// node. It is safe for concurrent use.
//
// The child's environment is exactly the target's env and the RAFTCRON_*
// variables (DESIGN §7): nothing of the node's environment leaks in, since it
// may hold the node's own secrets; not even PATH (command[0] is an absolute
// path; a job that runs a shell script sets PATH in its env, or lives with
// the shell's built-in default).
type ExecExecutor struct {
	cfg ExecConfig
}

// NewExecExecutor returns an executor under the policy c.
func NewExecExecutor(c ExecConfig) *ExecExecutor {
	return &ExecExecutor{cfg: c}
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
	// The registering node checked its own policy; this is the leader's, and
	// the leader's is the one that runs the program.
	if err := e.allow(t.GetCommand()[0]); err != nil {
		return refusedByPolicy(out, ReasonExecDenied, err.Error())
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

func (e *ExecExecutor) allow(command string) error {
	if e.cfg.Allow == nil {
		return errors.New("exec denied: this node allows no exec jobs")
	}
	return e.cfg.Allow.Allow(command)
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
	if cmd.Dir == "" {
		cmd.Dir = defaultDir
	}
	var output headBuffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	setProcAttr(cmd, e.cfg.User)
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
	jobEnv := a.Exec.GetEnv()
	env := make([]string, 0, len(jobEnv)+7)
	for _, k := range slices.Sorted(maps.Keys(jobEnv)) {
		env = append(env, k+"="+jobEnv[k])
	}
	env = append(env,
		fence.EnvFencingToken+"="+a.token(),
		fence.EnvJob+"="+a.Job,
		fence.EnvRunID+"="+a.RunID,
		fence.EnvScheduledAt+"="+a.scheduledAt(),
		fence.EnvAttempt+"="+a.number(),
		fence.EnvIdempotencyKey+"="+a.IdempotencyKey(),
	)
	if e.cfg.Signer != nil {
		env = append(env, fence.EnvSignature+"="+e.cfg.Signer.Sign(a.fenceRun()))
	}
	return env
}
