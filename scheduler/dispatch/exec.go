package dispatch

import (
	"context"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/internal/proc"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// defaultPath is used when the node itself has no PATH.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

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
	if err := proc.CheckDir(t.GetDir()); err != nil {
		return finish(out, pb.RunState_RUN_STATE_FAILED, err.Error())
	}
	if state, detail, ok := proc.Interrupted(ctx, ctx); ok {
		return finish(out, state, detail)
	}
	lctx, cancel := proc.WithLimit(ctx, a.Deadline, t.GetTimeout().AsDuration())
	defer cancel()
	r := proc.Run(ctx, lctx, proc.Command{Argv: t.GetCommand(), Env: e.environ(a), Dir: t.GetDir()})
	out.Output, out.FinishedAt = r.Output, r.FinishedAt
	return finish(out, r.State, r.Detail)
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
