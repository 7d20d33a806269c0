package worker

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/raftcron/raftcron/internal/proc"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// EnvWorker names the worker that runs a command, in its environment
// (besides the RAFTCRON_* variables of every exec run, DESIGN §7).
const EnvWorker = "RAFTCRON_WORKER"

// ReasonExecDenied starts the detail of a command this worker's ExecAllow
// does not permit, as a node's exec_denied does.
const ReasonExecDenied = "exec_denied"

// defaultPath is used when the worker itself has no PATH.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// runCommand runs a command target as a child process, if this worker's
// policy allows it.
func (w *Worker) runCommand(parent, ctx context.Context, a *pb.WorkerAttempt) (pb.RunState, string, []byte) {
	t := a.GetTarget()
	argv := t.GetCommand()
	if len(argv) == 0 || argv[0] == "" {
		return pb.RunState_RUN_STATE_FAILED, "worker: empty command", nil
	}
	if !w.allowed(argv[0]) {
		return pb.RunState_RUN_STATE_FAILED, fmt.Sprintf("%s: %s is not allowed by this worker's --exec-allow", ReasonExecDenied, argv[0]), nil
	}
	if err := proc.CheckDir(t.GetDir()); err != nil {
		return pb.RunState_RUN_STATE_FAILED, err.Error(), nil
	}
	if state, detail, ok := proc.Interrupted(parent, ctx); ok {
		return state, detail, nil
	}
	r := proc.Run(parent, ctx, proc.Command{Argv: argv, Env: w.environ(a), Dir: t.GetDir(), User: w.user})
	return r.State, r.Detail, r.Output
}

// allowed reports whether the program may run: an absolute path matching
// one of the ExecAllow globs. A relative name would resolve through PATH,
// which the glob never saw.
func (w *Worker) allowed(program string) bool {
	if !strings.HasPrefix(program, "/") || path.Clean(program) != program {
		return false
	}
	for _, g := range w.cfg.ExecAllow {
		if ok, _ := path.Match(g, program); ok {
			return true
		}
	}
	return false
}

// environ is the command's whole environment: the worker's PATH and HOME,
// the target's env, then the run's RAFTCRON_* variables and the worker's
// ID, which the target's env cannot override (the last entry wins).
func (w *Worker) environ(a *pb.WorkerAttempt) []string {
	p := os.Getenv("PATH")
	if p == "" {
		p = defaultPath
	}
	env := []string{"PATH=" + p}
	if home := os.Getenv("HOME"); home != "" {
		env = append(env, "HOME="+home)
	}
	jobEnv := a.GetTarget().GetEnv()
	for _, k := range slices.Sorted(maps.Keys(jobEnv)) {
		env = append(env, k+"="+jobEnv[k])
	}
	env = append(env, w.run(a).Fence().Environ()...)
	return append(env, EnvWorker+"="+w.cfg.ID)
}
