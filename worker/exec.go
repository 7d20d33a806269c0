package worker

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"
	"github.com/raftcron/raftcron/policy"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// EnvWorker names the worker that runs a command, in its environment
// (besides the RAFTCRON_* variables of every exec run, DESIGN §7).
const EnvWorker = "RAFTCRON_WORKER"

// ReasonExecDenied is the reason of an attempt this worker refused because
// its ExecAllow does not permit the command: the run fails and is never
// retried, as when a node refuses an exec job by its own --exec-allow (the
// node's dispatch.ReasonExecDenied, which the leader records).
const ReasonExecDenied = "exec_denied"

// newExecPolicy is the policy of cfg's ExecAllow and ExecEnvAllow.
func newExecPolicy(cfg Config) (*policy.Exec, error) {
	allow, err := policy.NewExec(cfg.ExecAllow)
	if err != nil {
		return nil, err
	}
	env, err := policy.NewEnv(cfg.ExecEnvAllow)
	if err != nil {
		return nil, err
	}
	return allow.WithEnv(env), nil
}

// refusal is why this worker's policy refuses a command target, or nil.
// The same rules as a node's --exec-allow and --exec-env-allow (package
// policy): what the cluster asks does not widen them.
func (w *Worker) refusal(a *pb.WorkerAttempt) error {
	argv := a.GetTarget().GetCommand()
	if len(argv) == 0 || argv[0] == "" {
		return nil // not a command at all: runCommand fails it
	}
	if err := w.allow.Allow(argv[0]); err != nil {
		return err
	}
	return w.allow.AllowEnv(a.GetTarget().GetEnv())
}

// runCommand runs a command target as a child process; the policy was
// checked (refusal).
func (w *Worker) runCommand(parent, ctx context.Context, a *pb.WorkerAttempt) (pb.RunState, string, []byte) {
	t := a.GetTarget()
	argv := t.GetCommand()
	if len(argv) == 0 || argv[0] == "" {
		return pb.RunState_RUN_STATE_FAILED, "worker: empty command", nil
	}
	if err := proc.CheckDir(t.GetDir()); err != nil {
		return pb.RunState_RUN_STATE_FAILED, err.Error(), nil
	}
	if state, detail, ok := proc.Interrupted(parent, ctx); ok {
		return state, detail, nil
	}
	// The token marks the attempt's processes: no other attempt has it.
	mark := fence.EnvFencingToken + "=" + strconv.FormatUint(a.GetToken(), 10)
	r := proc.Run(parent, ctx, proc.Command{Argv: argv, Env: w.environ(a), Dir: t.GetDir(), User: w.user, Mark: mark})
	return r.State, r.Detail, r.Output
}

// environ is the command's whole environment, as for a node's exec run:
// the target's env, then the run's RAFTCRON_* variables, its signature if
// the cluster signs, and the worker's ID, which the target's env cannot
// override (the last entry wins). Nothing of the worker's own environment
// leaks in, since it may hold the worker's secrets; not even PATH
// (command[0] is an absolute path).
func (w *Worker) environ(a *pb.WorkerAttempt) []string {
	jobEnv := a.GetTarget().GetEnv()
	env := make([]string, 0, len(jobEnv)+8)
	for _, k := range slices.Sorted(maps.Keys(jobEnv)) {
		env = append(env, k+"="+jobEnv[k])
	}
	env = append(env, w.run(a).Fence().Environ()...)
	if sig := a.GetSignature(); sig != "" {
		env = append(env, fence.EnvSignature+"="+sig)
	}
	if p := a.GetParentRuns(); p != "" {
		env = append(env, fence.EnvParentRuns+"="+p)
	}
	return append(env, EnvWorker+"="+w.cfg.ID)
}
