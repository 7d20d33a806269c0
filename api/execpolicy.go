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

// ExecPolicy decides which programs exec jobs may run on this node (policy.Exec does,
// from --exec-allow). Allow returns why command may not run, or nil.
type ExecPolicy interface {
	Allow(command string) error
}

// ReasonExecDenied is the ErrorInfo reason of a job refused because this node's exec
// policy does not allow its program.
const ReasonExecDenied = "EXEC_DENIED"

// execField names the program of a job in a request's violations.
const execField = "exec.command[0]"

// errExecDisabled is the verdict of a JobService without an ExecPolicy.
var errExecDisabled = errors.New("exec jobs are disabled on this node (--exec-allow is empty)")

// allowExec refuses an exec job whose program this node may not run: exec is opt-in,
// and a job registered here would run on whichever node leads (which checks its own
// policy again before it runs anything).
func (j *jobService) allowExec(spec *pb.JobSpec) error {
	e := spec.GetExec()
	if e == nil {
		return nil
	}
	if j.exec == nil {
		return errExecDisabled
	}
	return j.exec.Allow(e.GetCommand()[0])
}

// execDenied is the PermissionDenied status of a refused exec job: field names the
// program in the request ("exec.command[0]", "specs[3].exec.command[0]"), message says
// why.
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
		if err := j.allowExec(w.spec); err != nil {
			field := fmt.Sprintf("specs[%d].%s", i, execField)
			return execDenied(field, fmt.Sprintf("nothing applied: %s: %v", field, err))
		}
	}
	return nil
}
