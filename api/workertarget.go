package api

import (
	"fmt"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// PreconditionClusterVersion is the PreconditionFailure type of a job
// refused because the cluster does not run the version its target needs.
const PreconditionClusterVersion = "CLUSTER_VERSION"

// allowWorker refuses a worker target until the cluster runs
// fsm.WorkersVersion: before, a voter of an older release may lead, which
// knows no worker and would apply the job's changes as it understands them.
func (j *jobService) allowWorker(spec *pb.JobSpec) error {
	if spec.GetWorker() == nil || j.clusterVersion == nil {
		return nil
	}
	if v := j.clusterVersion(); v < fsm.WorkersVersion {
		return precondition(PreconditionClusterVersion, spec.GetName(), fmt.Sprintf(
			"job %q: a worker target needs cluster version %d, and the cluster runs %d: upgrade every voter; "+
				"the leader raises the version once they all apply it (cluster status shows it)",
			spec.GetName(), fsm.WorkersVersion, v))
	}
	return nil
}

// allowWorkerBatch refuses a whole ApplyJobs call if one of its specs is
// refused, naming the first.
func (j *jobService) allowWorkerBatch(writes []write) error {
	for _, w := range writes {
		if err := j.allowWorker(w.spec); err != nil {
			return err
		}
	}
	return nil
}
