package dispatch

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// ExecConfig is the node's policy for exec attempts. The zero value runs nothing.
type ExecConfig struct {
	// Allow decides which programs may run and which variables their env may set
	// (policy.Exec, from --exec-allow and --exec-env-allow). Nil allows none: exec
	// is opt-in.
	Allow CommandPolicy
	// User, if set, is whom children run as (--exec-user; the node must be root).
	User *proc.User
	// Signer, if set, signs every attempt into RAFTCRON_SIGNATURE.
	Signer *Signer
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
	if err := e.allow(t); err != nil {
		return refusedByPolicy(out, ReasonExecDenied, err.Error())
	}
	if err := proc.CheckDir(t.GetDir()); err != nil {
		return finish(out, pb.RunState_RUN_STATE_FAILED, err.Error())
	}
	if state, detail, ok := proc.Interrupted(ctx, ctx); ok {
		return finish(out, state, detail)
	}
	deadline, timeout := a.Limits()
	lctx, cancel := proc.WithLimit(ctx, deadline, timeout)
	defer cancel()
	r := proc.Run(ctx, lctx, proc.Command{Argv: t.GetCommand(), Env: e.environ(a), Dir: t.GetDir(), User: e.cfg.User,
		Mark: a.tokenEntry()})
	out.Output, out.FinishedAt = r.Output, r.FinishedAt
	return finish(out, r.State, r.Detail)
}

func (e *ExecExecutor) allow(t *pb.ExecTarget) error {
	if e.cfg.Allow == nil {
		return errors.New("exec denied: this node allows no exec jobs")
	}
	if err := e.cfg.Allow.Allow(t.GetCommand()[0]); err != nil {
		return err
	}
	return e.cfg.Allow.AllowEnv(t.GetEnv())
}

// tokenEntry is the attempt's fencing token as its environment holds it: no
// other attempt's has it, so it marks the attempt's processes (proc.Command.Mark).
func (a Attempt) tokenEntry() string { return fence.EnvFencingToken + "=" + a.token() }

// environ builds the child's environment. Later entries win on duplicate
// keys (os/exec keeps the last), so the RAFTCRON_* values cannot be
// overridden by the job's env.
func (e *ExecExecutor) environ(a Attempt) []string {
	jobEnv := a.Exec.GetEnv()
	env := make([]string, 0, len(jobEnv)+8)
	for _, k := range slices.Sorted(maps.Keys(jobEnv)) {
		env = append(env, k+"="+jobEnv[k])
	}
	env = append(env,
		a.tokenEntry(),
		fence.EnvJob+"="+a.Job,
		fence.EnvRunID+"="+a.RunID,
		fence.EnvScheduledAt+"="+a.scheduledAt(),
		fence.EnvAttempt+"="+a.number(),
		fence.EnvIdempotencyKey+"="+a.IdempotencyKey(),
	)
	if e.cfg.Signer != nil {
		env = append(env, fence.EnvSignature+"="+e.cfg.Signer.SignRun(a.FenceRun(), nil))
	}
	if a.ParentRuns != "" {
		env = append(env, fence.EnvParentRuns+"="+a.ParentRuns)
	}
	if a.Payload != "" {
		env = append(env, EnvPayload+"="+a.Payload)
	}
	return env
}
