package api

import (
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/cluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// ExecPolicy decides which programs exec jobs may run on this node and which
// environment variables exec and worker jobs may set (policy.Exec does, from
// --exec-allow and --exec-env-allow). Allow returns why command may not run, AllowEnv
// why env may not be set, or nil.
type ExecPolicy interface {
	Allow(command string) error
	AllowEnv(env map[string]string) error
}

// ReasonExecDenied is the ErrorInfo reason of a job refused because this node's exec
// policy does not allow its program or a variable of its env.
const ReasonExecDenied = "EXEC_DENIED"

// The fields of a job that the exec policy judges, as a request's violations name them.
const (
	execField      = "exec.command[0]"
	execEnvField   = "exec.env"
	workerEnvField = "worker.env"
)

// Verdicts of a JobService without an ExecPolicy.
var (
	errExecDisabled = errors.New("exec jobs are disabled on this node (--exec-allow is empty)")
	errEnvDisabled  = errors.New("this node has no exec policy to judge environment variables by")
)

// allowExec refuses an exec job whose program this node may not run, and an exec or
// worker job whose env sets a variable this node refuses (one that makes a loader or
// interpreter run code of the value's choosing): exec is opt-in, and a job registered
// here would run on whichever node leads (which checks its own policy again before it
// runs anything) or worker takes it (which checks its own). It returns the field that
// broke the rule.
func (j *jobService) allowExec(spec *pb.JobSpec) (field string, err error) {
	if e := spec.GetExec(); e != nil {
		if j.exec == nil {
			return execField, errExecDisabled
		}
		if err := j.exec.Allow(e.GetCommand()[0]); err != nil {
			return execField, err
		}
		return execEnvField, j.exec.AllowEnv(e.GetEnv())
	}
	if env := spec.GetWorker().GetEnv(); len(env) > 0 {
		if j.exec == nil {
			return workerEnvField, errEnvDisabled
		}
		return workerEnvField, j.exec.AllowEnv(env)
	}
	return "", nil
}

// execDenied is the PermissionDenied status of a refused job: field names the program
// or the env in the request ("exec.command[0]", "specs[3].worker.env"), message says
// why (naming the variable).
func execDenied(field, message string) error {
	st, err := status.New(codes.PermissionDenied, message).WithDetails(&errdetails.ErrorInfo{
		Reason:   ReasonExecDenied,
		Domain:   cluster.ErrorDomain,
		Metadata: map[string]string{"field": field},
	})
	if err != nil {
		return status.Error(codes.PermissionDenied, message)
	}
	return st.Err()
}

// allowExecBatch refuses a whole ApplyJobs call if one of its specs is refused, naming
// the first.
func (j *jobService) allowExecBatch(writes []write) error {
	for i, w := range writes {
		if f, err := j.allowExec(w.spec); err != nil {
			field := fmt.Sprintf("specs[%d].%s", i, f)
			return execDenied(field, fmt.Sprintf("nothing applied: %s: %v", field, err))
		}
	}
	return nil
}
