package fsm

import (
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// History belongs to a job, not to a name. The ledger keeps runs by name
// (a deleted job's history stays until a job of its name prunes it, and
// its runs still executing at the delete finish later), so a job created
// under a deleted job's name must tell its own runs from the deleted
// job's. Generations are that identity already: they never repeat per name
// (tombstone.go), a new job starts above every generation the name had,
// and a run carries the generation it was fired in. So a job records the
// generation it was created with (JobStatus.first_generation), and its
// runs are those of its name from that generation on.
//
// Only createJob is gated on the cluster version (3): before it, no job
// records a first generation (0), so every job owns every run of its name
// and the rules that ask whose a run is (a trigger's idempotency, a scoped
// cancel) apply exactly as version 2 did. A job created before the upgrade,
// or restored from a snapshot taken before it, keeps owning every run of
// its name: the runs of an earlier job of the name cannot be told apart
// any more.

// owns reports whether the job it fired r: r is of its name, and of its
// first generation or a later one.
func owns(it jobItem, r *pb.Run) bool {
	return r.GetJob() == it.name && r.GetGeneration() >= it.status.GetFirstGeneration()
}

// jobOf is the live job r belongs to; false when its job was deleted, even
// if a job of the same name was created since.
func (s *state) jobOf(r *pb.Run) (jobItem, bool) {
	it, ok := s.item(r.GetJob())
	if !ok || !owns(it, r) {
		return jobItem{}, false
	}
	return it, true
}

// inScope reports whether r belongs to a live job whose labels include sel.
func (s *state) inScope(r *pb.Run, sel map[string]string) bool {
	it, ok := s.jobOf(r)
	return ok && hasLabels(it.job.GetSpec(), sel)
}

// view is the copy of a stored run a read hands out, marked job_deleted
// when no live job owns it.
func (s *state) view(r *pb.Run) *pb.Run {
	c := cloneRun(r)
	if _, ok := s.jobOf(r); !ok {
		c.JobDeleted = true
	}
	return c
}

// RunInScope reports whether run belongs to a live job whose labels
// include selector: whether a caller scoped to selector may see it. A run
// of a deleted job is in no scope, even once a job of its name is created
// again.
func (f *FSM) RunInScope(run *pb.Run, selector map[string]string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.inScope(run, selector)
}
