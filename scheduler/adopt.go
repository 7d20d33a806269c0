package scheduler

import (
	"fmt"

	"github.com/raftcron/raftcron/fsm"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// adopt ends the tick, once every entry has returned: it dispatches the
// attempts planning found committed but never dispatched (adoptRun),
// reports the check-in runs past their deadline, and queues the tick's
// jobs for planning again, except those whose accepted fires left their
// plan standing (fresh.go).
func (p *pipeline) adopt() {
	for _, pl := range p.parts {
		for _, g := range pl.groups {
			for _, r := range g.adopt {
				p.adoptRun(g.job, r)
			}
			for _, c := range g.expire {
				p.report(g.name, c)
			}
		}
		p.l.s.markDirty(pl.names()...)
	}
}

// names lists the planned jobs that must be planned again.
func (pl *planned) names() []string {
	out := make([]string, 0, len(pl.groups))
	for _, g := range pl.groups {
		if g.name != "" && !g.fresh {
			out = append(out, g.name)
		}
	}
	return out
}

// adoptRun dispatches an attempt this node committed in this term without
// learning it (the FireBatch's Apply had returned an error), with the job
// as planning read it. The FSM accepted the attempt under the run's
// generation: if the job has moved to another since, its target is not
// the attempt's, and the attempt is closed CANCELLED without running.
func (p *pipeline) adoptRun(job *pb.Job, r *pb.Run) {
	l := p.l
	cur := fsm.CurrentAttempt(r)
	if job == nil || cur == nil || l.isKnown(cur.GetToken()) {
		return
	}
	if r.GetGeneration() != job.GetGeneration() {
		l.s.log.Info("scheduler: not dispatching an attempt of an earlier generation of its job",
			"job", r.GetJob(), "run_id", r.GetId(), "token", cur.GetToken(),
			"generation", r.GetGeneration(), "job_generation", job.GetGeneration())
		p.abandon(r, cur, fmt.Sprintf("not dispatched: the job moved to generation %d", job.GetGeneration()))
		return
	}
	if r.GetKind() != pb.FireKind_FIRE_KIND_CHAINED || cur.GetNumber() > 1 {
		l.s.log.Info("scheduler: dispatching an attempt committed after its proposal failed",
			"job", r.GetJob(), "run_id", r.GetId(), "token", cur.GetToken())
	}
	if r.GetKind() == pb.FireKind_FIRE_KIND_CHAINED && job.GetSpec().GetOverlap() == pb.Overlap_OVERLAP_CANCEL_OTHER {
		// The entry that fired it cancelled the job's open runs (chain.go);
		// stop their attempts, as for a fire of this term.
		l.s.handoff.cancelJob(r.GetJob(), cur.GetToken(), errCancelOther)
	}
	t := l.task(job.GetSpec(), r.GetId(), r.GetSlotUnix(), cur.GetToken(), cur.GetNumber(), cur.GetKind())
	t.a.Kind = r.GetKind()
	t.carry(r)
	l.s.handoff.dispatch(t)
}

// abandon reports an attempt of this term that never ran as CANCELLED, so
// that its run closes instead of waiting for the next leader.
func (p *pipeline) abandon(r *pb.Run, cur *pb.Attempt, detail string) {
	p.report(r.GetJob(), &pb.Completion{
		RunId: r.GetId(), Token: cur.GetToken(), Outcome: pb.RunState_RUN_STATE_CANCELLED, Detail: detail,
	})
}

// report commits an outcome this leader decided itself, of a run of job
// that nothing executes here.
func (p *pipeline) report(job string, c *pb.Completion) {
	l := p.l
	if l.isKnown(c.GetToken()) {
		return // reported already, not committed yet
	}
	l.known[c.GetToken()] = struct{}{} // in hand until the outcome commits
	l.unsettled.Add(1)
	if !l.comp.add(job, c) {
		l.unsettled.Add(-1)
	}
}
