package dispatch

import (
	"time"

	"github.com/raftcron/raftcron/jobspec"
)

// Limits are the job deadline and the target timeout that bound a, for
// proc.WithLimit. A target without a timeout of its own gets the default
// of its kind: a webhook jobspec.DefaultHTTPTimeout; a command, here or on
// a remote worker, and a worker's handler its job's deadline, or
// jobspec.DefaultExecTimeout when the job has none.
func (a Attempt) Limits() (deadline, timeout time.Duration) {
	if a.HTTP != nil {
		if a.HTTP.GetTimeout() == nil {
			return a.Deadline, jobspec.DefaultHTTPTimeout
		}
		return a.Deadline, a.HTTP.GetTimeout().AsDuration()
	}
	own := a.Exec.GetTimeout()
	if a.Worker != nil {
		own = a.Worker.GetTimeout()
	}
	if own == nil && a.Deadline <= 0 {
		return 0, jobspec.DefaultExecTimeout
	}
	return a.Deadline, own.AsDuration()
}
