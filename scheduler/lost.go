package scheduler

import (
	"time"

	"github.com/raftcron/raftcron/fsm"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// lostRetry is the pause before proposing a lost attempt's re-dispatch
// again after it failed to commit.
const lostRetry = time.Second

// A lost attempt (its remote worker missed its lease, or its stream broke)
// is resolved in this very term by a REDISPATCH fire naming its token:
// at_least_once runs it again under a new token, at_most_once is recorded
// unknown. The FSM honours the token only at cluster version
// fsm.WorkersVersion (below it, it refuses the fire as an older voter
// would), so such fires wait in the queue until the cluster runs it; and
// they travel in FireBatch entries of their own, so that one that does not
// commit waits and is proposed again, and never holds up the fires of the
// tick.

// lostFire is a queued re-dispatch of a lost attempt.
type lostFire struct {
	f         *pb.Fire
	notBefore time.Time
}

// lost takes an attempt whose remote worker was lost. Its token stays
// known until the re-dispatch is decided, so that planning never adopts
// it. Once the term is over the next leader reconciles it.
func (l *leader) lost(t *task) {
	if l.ctx.Err() != nil {
		return
	}
	if v := l.s.state.ClusterVersion(); v < fsm.WorkersVersion {
		l.s.log.Warn("scheduler: an attempt lost with its worker waits until the cluster runs the version that re-dispatches it",
			"job", t.a.Job, "run_id", t.a.RunID, "token", t.a.Token, "cluster_version", v, "needs", fsm.WorkersVersion)
	}
	f := &pb.Fire{
		Job:       t.a.Job,
		SlotUnix:  t.a.ScheduledAt.Unix(),
		Kind:      pb.FireKind_FIRE_KIND_REDISPATCH,
		RunId:     t.a.RunID,
		LostToken: t.a.Token,
	}
	l.queueLost([]*pb.Fire{f}, time.Time{})
}

// queueLost queues re-dispatches of lost attempts for the first tick at
// or after notBefore.
func (l *leader) queueLost(fires []*pb.Fire, notBefore time.Time) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	for _, f := range fires {
		l.lostFires = append(l.lostFires, lostFire{f: f, notBefore: notBefore})
	}
	l.mu.Unlock()
	l.s.wakeLoop()
}

// planLost plans the queued re-dispatches that are due, grouped by job.
// None is due before the cluster runs fsm.WorkersVersion.
func (l *leader) planLost(now time.Time) *planned {
	applies := l.s.state.ClusterVersion() >= fsm.WorkersVersion
	l.mu.Lock()
	var due []*pb.Fire
	keep := l.lostFires[:0]
	for _, lf := range l.lostFires {
		if !applies || lf.notBefore.After(now) {
			keep = append(keep, lf)
			continue
		}
		due = append(due, lf.f)
	}
	clear(l.lostFires[len(keep):])
	l.lostFires = keep
	l.mu.Unlock()
	pl := newPlanned()
	for _, f := range due {
		var job *pb.Job
		if sj, err := l.s.state.StoredJob(f.GetJob()); err == nil {
			job = sj.Job // a deleted job has none: the FSM closes its run
		}
		// The fire names the run's generation, not the job's: a run of
		// an earlier one is then given up, not refused again every tick.
		if r, err := l.s.state.Run(f.GetRunId()); err == nil {
			f.Generation = r.GetGeneration()
		}
		g := pl.group(f.GetJob(), job)
		g.fires = append(g.fires, f)
		l.resolving[f.GetLostToken()] = struct{}{}
	}
	return pl
}

func (l *leader) isResolving(token uint64) bool {
	_, ok := l.resolving[token]
	return ok
}

// lostNotCommitted queues the re-dispatches of a batch that failed to
// commit for another try.
func (l *leader) lostNotCommitted(now time.Time, c *fireBatch, err error) {
	if l.ctx.Err() != nil {
		return
	}
	l.s.log.Warn("scheduler: re-dispatch of attempts lost with their worker not committed; trying again",
		"error", err, "fires", len(c.fires), "retry_in", lostRetry)
	l.queueLost(c.fires, now.Add(lostRetry))
}
