package fsm

import (
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The read views below take the read lock and hand out clones, so callers
// may keep and change what they get while Apply goes on.

// Job returns the job with that name, or an error wrapping ErrNotFound.
func (f *FSM) Job(name string) (*pb.Job, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	j, ok := f.st.job(name)
	if !ok {
		return nil, fail(ErrNotFound, "job %q not found", name)
	}
	return cloneJob(j), nil
}

// ListQuery selects one page of jobs in name order.
type ListQuery struct {
	// After is the last name of the previous page; only names after it count.
	After string
	// Limit caps the page; zero or less means no cap.
	Limit int
	// Labels must all be present on a job, with these values.
	Labels map[string]string
}

// ListJobs returns the jobs with a name after q.After that carry all of
// q.Labels, in name order, at most q.Limit of them. nextAfter is the last
// returned name when more matching jobs follow, else "".
func (f *FSM) ListJobs(q ListQuery) (jobs []*pb.Job, nextAfter string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	more := false
	f.st.jobs.AscendGreaterOrEqual(jobEntry{name: q.After}, func(e jobEntry) bool {
		if e.name == q.After || !hasLabels(e.job, q.Labels) {
			return true
		}
		if q.Limit > 0 && len(jobs) == q.Limit {
			more = true
			return false
		}
		jobs = append(jobs, cloneJob(e.job))
		return true
	})
	if more {
		nextAfter = jobs[len(jobs)-1].GetSpec().GetName()
	}
	return jobs, nextAfter
}

func hasLabels(j *pb.Job, want map[string]string) bool {
	have := j.GetSpec().GetLabels()
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// FencingToken is the current value of the fencing-token counter.
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
