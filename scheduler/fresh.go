package scheduler

import pb "github.com/raftcron/raftcron/proto/raftcron/v1"

// A fire's own FireBatch changes its job's status, but the scheduler does
// not hear its own entries come back through the FSM (Scheduler.echo):
// once they have returned, the tick queues the jobs it planned for
// planning again itself (pipeline.adopt). It leaves out the fresh ones:
// planned with nothing of the job open or buffered (group.quiet), with all
// their fires accepted as scheduled, untriggered first attempts. Planning
// such a job again would find only the new runs, which this leader holds,
// and the next slot that its plan already put on the heap. Whatever else
// changes it (an outcome, an update, a pause, a cancel) comes in another
// entry, which the observer hears.

// noteFresh marks the quiet groups of a committed entry whose fires were
// all accepted as planned.
func (c *fireBatch) noteFresh(res *pb.CommandResult) {
	i := 0
	for _, g := range c.groups {
		from := i
		i += len(g.fires)
		if !g.quiet || g.job == nil || len(g.fires) == 0 {
			continue
		}
		if acceptedAsPlanned(c.fires[from:i], c.reqs[from:i], res.GetFires()[from:i]) {
			g.fresh = true
		}
	}
}

// acceptedAsPlanned reports whether the fires were all accepted as
// scheduled, untriggered first attempts.
func acceptedAsPlanned(fires []*pb.Fire, reqs []*triggerReq, results []*pb.FireResult) bool {
	for k, fire := range fires {
		r := results[k]
		if reqs[k] != nil || !r.GetAccepted() || fire.GetKind() != pb.FireKind_FIRE_KIND_SCHEDULED || r.GetAttempt() != 1 {
			return false
		}
	}
	return true
}
