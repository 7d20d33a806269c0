package fsm

import (
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The read views below take the read lock and hand out clones, so callers
// may keep and change what they get while Apply goes on.

// Job returns the job with that name, status filled in, or an error
// wrapping ErrNotFound.
func (f *FSM) Job(name string) (*pb.Job, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	it, ok := f.st.item(name)
	if !ok {
		return nil, fail(ErrNotFound, "job %q not found", name)
	}
	return f.st.jobView(it), nil
}

// jobView is the job of it for a reader: a clone, status filled in, with
// its backfill's runs in flight counted.
func (s *state) jobView(it jobItem) *pb.Job {
	j := cloneJob(it.job, it.status)
	if bf := j.GetStatus().GetBackfill(); bf != nil {
		n, _ := s.openRunsByKind(it.status)
		bf.InFlight = uint32(n)
	}
	return j
}

// ListQuery selects one page of jobs in name order.
type ListQuery struct {
	// After is the last name of the previous page; only names after it count.
	After string
	// Limit caps the page; zero or less means no cap.
	Limit int
	// Labels must all be present on a job, with these values.
	Labels map[string]string
	// MaxScan caps the jobs one call looks at, matching or not, so that a
	// selective filter never holds the read lock for a walk over the whole
	// registry; zero or less means no cap.
	MaxScan int
}

// ListJobs returns the jobs with a name after q.After that carry all of
// q.Labels, in name order, status filled in, at most q.Limit of them.
// nextAfter is where the next page starts when the call stopped early, else
// "": the last returned name when more matching jobs follow, or the last
// name looked at when q.MaxScan ran out. A page may then hold fewer than
// q.Limit jobs, even none.
func (f *FSM) ListJobs(q ListQuery) (jobs []*pb.Job, nextAfter string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	scanned, last := 0, ""
	f.st.jobs.AscendGreaterOrEqual(jobItem{name: q.After}, func(it jobItem) bool {
		if it.name == q.After {
			return true
		}
		if q.MaxScan > 0 && scanned == q.MaxScan {
			nextAfter = last
			return false
		}
		scanned, last = scanned+1, it.name
		if !hasLabels(it.job.GetSpec(), q.Labels) {
			return true
		}
		if q.Limit > 0 && len(jobs) == q.Limit {
			nextAfter = jobs[len(jobs)-1].GetSpec().GetName()
			return false
		}
		jobs = append(jobs, f.st.jobView(it))
		return true
	})
	return jobs, nextAfter
}

// FencingToken is the current value of the fencing-token counter: the
// token of the last accepted attempt, 0 before the first.
func (f *FSM) FencingToken() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.counter
}

// JobCount is the number of registered jobs.
func (f *FSM) JobCount() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.jobs.Len()
}

// JobStatus returns the run-side status of the job with that name, or an
// error wrapping ErrNotFound.
func (f *FSM) JobStatus(name string) (*pb.JobStatus, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	it, ok := f.st.item(name)
	if !ok {
		return nil, fail(ErrNotFound, "job %q not found", name)
	}
	return cloneStatus(it.status), nil
}

// Run returns the run with that id, marked job_deleted when no live job
// owns it, or an error wrapping ErrNotFound (it never existed, or it was
// pruned from its job's history).
func (f *FSM) Run(id string) (*pb.Run, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, ok := f.st.run(id)
	if !ok {
		return nil, fail(ErrNotFound, "run %q not found", id)
	}
	return f.st.view(r), nil
}

// OpenRuns returns every run still DISPATCHED or RETRYING — of live jobs
// and of deleted ones — sorted by job, slot and id.
func (f *FSM) OpenRuns() []*pb.Run {
	f.mu.RLock()
	defer f.mu.RUnlock()
	runs := make([]*pb.Run, 0, f.st.ix.open.Len())
	f.st.ix.open.Ascend(func(k openKey) bool {
		if r, ok := f.st.run(k.id); ok {
			runs = append(runs, cloneRun(r))
		}
		return true
	})
	return runs
}

// StoredJob is what the scheduler needs to plan one job. Both messages
// are the FSM's stored values, shared to keep a walk over a million jobs
// cheap: read them, never change them. Job.Status is not set; the status is
// beside it. Job.Spec.Labels is not set either: the stored spec keeps its
// labels in wire form among its unknown fields (see stored.go), and Job and
// ListJobs return them. Job.CreatedAt and Job.UpdatedAt may be one message.
type StoredJob struct {
	Job    *pb.Job
	Status *pb.JobStatus
}

// StoredJobs calls fn for every job in name order until fn returns
// false. It walks a copy-on-write capture of the registry taken when it is
// called, outside any lock, so fn sees one consistent state and may call
// back into the FSM.
func (f *FSM) StoredJobs(fn func(sj StoredJob) bool) {
	f.mu.Lock() // Clone writes the trees' copy-on-write bookkeeping
	jobs := f.st.jobs.Clone()
	f.mu.Unlock()
	jobs.Ascend(func(it jobItem) bool {
		return fn(StoredJob{Job: it.job, Status: it.status})
	})
}

// StoredJob returns the stored job and its status without copying them, or an
// error wrapping ErrNotFound. The same sharing rules as StoredJob hold:
// read, never change. It exists so the leader's per-fire planning does not
// deep-copy a job two or three times per fire.
func (f *FSM) StoredJob(name string) (StoredJob, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	it, ok := f.st.item(name)
	if !ok {
		return StoredJob{}, fail(ErrNotFound, "job %q not found", name)
	}
	return StoredJob{Job: it.job, Status: it.status}, nil
}
