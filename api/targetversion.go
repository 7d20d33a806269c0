package api

import (
	"context"
	"fmt"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// PreconditionClusterVersion is the PreconditionFailure type of a job or a
// token refused because the cluster does not run the version it needs.
const PreconditionClusterVersion = "CLUSTER_VERSION"

// allowTarget refuses a spec the cluster does not run the version of:
// a worker target before fsm.WorkersVersion, a check-in before
// fsm.CheckinsVersion, schedule rules before fsm.SchedulesVersion. Before,
// a voter of an older release may lead, which knows no such field and
// would apply the job's changes as it understands them.
func (j *jobService) allowTarget(ctx context.Context, spec *pb.JobSpec) error {
	switch {
	case spec.GetWorker() != nil:
		if err := j.needVersion(ctx, spec.GetName(), "a worker target", fsm.WorkersVersion); err != nil {
			return err
		}
	case spec.GetCheckin() != nil:
		if err := j.needVersion(ctx, spec.GetName(), "a check-in", fsm.CheckinsVersion); err != nil {
			return err
		}
	}
	return j.allowScheduleRules(ctx, spec)
}

// allowScheduleRules refuses schedules, jitter, max_runs and
// pause_after_failures until the cluster runs fsm.SchedulesVersion: an
// older voter would store them and fire as if they were not there.
func (j *jobService) allowScheduleRules(ctx context.Context, spec *pb.JobSpec) error {
	if len(spec.GetSchedules()) == 0 && spec.GetJitter() == nil && spec.GetMaxRuns() == 0 && spec.GetPauseAfterFailures() == 0 {
		return nil
	}
	return j.needVersion(ctx, spec.GetName(), "schedules, jitter, max_runs and pause_after_failures", fsm.SchedulesVersion)
}

// allowTargets refuses a whole ApplyJobs call if one of its specs is
// refused, naming the first.
func (j *jobService) allowTargets(ctx context.Context, writes []write) error {
	for _, w := range writes {
		if err := j.allowTarget(ctx, w.spec); err != nil {
			return err
		}
	}
	return nil
}

func (j *jobService) needVersion(ctx context.Context, job, what string, need uint32) error {
	return versionNeeded(ctx, j.store, j.clusterVersion, fmt.Sprintf("job %q: %s", job, what), "jobs/"+job, need)
}

// versionNeeded is the refusal of what (on subject) while the cluster runs
// a version below need; nil when it runs need, or when clusterVersion is
// nil (no check).
func versionNeeded(ctx context.Context, b Barrier, clusterVersion func() uint32, what, subject string, need uint32) error {
	if clusterVersion == nil {
		return nil
	}
	v, err := committedVersion(ctx, b, clusterVersion, need)
	if err != nil || v >= need {
		return err
	}
	return preconditionOn(PreconditionClusterVersion, subject, fmt.Sprintf(
		"%s needs cluster version %d, and the cluster runs %d: upgrade every voter; "+
			"the leader raises the version once they all apply it (cluster status shows it)", what, need, v))
}

// committedVersion is the cluster version as committed, as far as need
// goes: this node may not have applied the leader's raise yet (a follower
// right after the first election), so a version below need is read again
// after a read barrier; one at or above it is committed already.
func committedVersion(ctx context.Context, b Barrier, version func() uint32, need uint32) (uint32, error) {
	if v := version(); v >= need {
		return v, nil
	}
	if err := b.ReadBarrier(ctx); err != nil {
		return 0, statusOf(err)
	}
	return version(), nil
}
