package api

import (
	"fmt"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// PreconditionClusterVersion is the PreconditionFailure type of a job or a
// token refused because the cluster does not run the version it needs.
const PreconditionClusterVersion = "CLUSTER_VERSION"

// allowTarget refuses a target the cluster does not run the version of:
// a worker target before fsm.WorkersVersion, a check-in before
// fsm.CheckinsVersion. Before, a voter of an older release may lead, which
// knows no such target and would apply the job's changes as it
// understands them.
func (j *jobService) allowTarget(spec *pb.JobSpec) error {
	switch {
	case spec.GetWorker() != nil:
		return j.needVersion(spec.GetName(), "a worker target", fsm.WorkersVersion)
	case spec.GetCheckin() != nil:
		return j.needVersion(spec.GetName(), "a check-in", fsm.CheckinsVersion)
	}
	return nil
}

// allowTargets refuses a whole ApplyJobs call if one of its specs is
// refused, naming the first.
func (j *jobService) allowTargets(writes []write) error {
	for _, w := range writes {
		if err := j.allowTarget(w.spec); err != nil {
			return err
		}
	}
	return nil
}

func (j *jobService) needVersion(job, what string, need uint32) error {
	return versionNeeded(j.clusterVersion, fmt.Sprintf("job %q: %s", job, what), "jobs/"+job, need)
}

// versionNeeded is the refusal of what (on subject) while the cluster runs
// a version below need; nil when it runs need, or when clusterVersion is
// nil (no check).
func versionNeeded(clusterVersion func() uint32, what, subject string, need uint32) error {
	if clusterVersion == nil {
		return nil
	}
	v := clusterVersion()
	if v >= need {
		return nil
	}
	return preconditionOn(PreconditionClusterVersion, subject, fmt.Sprintf(
		"%s needs cluster version %d, and the cluster runs %d: upgrade every voter; "+
			"the leader raises the version once they all apply it (cluster status shows it)", what, need, v))
}
