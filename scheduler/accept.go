package scheduler

import (
	"time"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/failpoint"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// refusedCooldown rests a job whose fires the FSM refused without effect
// (duplicate, generation, not_due, ...): the state will change, or the
// next leader will look again.
const refusedCooldown = time.Second

// acceptReady accepts the entries that have committed, in proposal
// order, without waiting for the others.
func (p *pipeline) acceptReady() {
	for p.accepted < len(p.pending) {
		pc := p.pending[p.accepted]
		select {
		case r := <-pc.done:
			p.settle(pc, r)
		default:
			return
		}
	}
}

// acceptRest waits for every entry still out and accepts it, in proposal
// order: the tick's deliveries are then all with the hand-off.
func (p *pipeline) acceptRest() {
	for p.accepted < len(p.pending) {
		pc := p.pending[p.accepted]
		p.settle(pc, <-pc.done)
	}
	p.l.firing.Store(false)
}

// settle takes one entry's outcome: its accepted fires go to the hand-off;
// if it failed to commit, nothing does.
func (p *pipeline) settle(pc *pendingBatch, r batchResult) {
	p.accepted++
	l, c := p.l, pc.c
	if r.err != nil && c.onlyLost() {
		l.lostNotCommitted(p.now, c, r.err)
		return
	}
	if r.err != nil {
		p.failed = true
		if l.ctx.Err() == nil {
			l.s.log.Warn("scheduler: fire batch not committed; nothing dispatched",
				"error", r.err, "fires", len(c.fires), "misses", len(c.misses))
		}
		c.failTriggers(r.err)
		return
	}
	p.accept(c, r.res)
}

// onlyLost reports whether the batch holds nothing but re-dispatches of
// lost attempts (which planning never proposes again).
func (c *fireBatch) onlyLost() bool {
	for _, f := range c.fires {
		if f.GetLostToken() == 0 {
			return false
		}
	}
	return len(c.misses) == 0
}

// failTriggers answers the triggers of an entry that failed to commit.
func (c *fireBatch) failTriggers(err error) {
	for _, r := range c.reqs {
		if r != nil {
			r.reply(nil, err)
		}
	}
}

// accept dispatches the accepted fires of a committed entry, in order (so
// in token order), and counts what was recorded missed. The attempts go
// to the hand-off together, under one lock: one by one, each would
// contend for it with the outcomes of the entries before.
func (p *pipeline) accept(c *fireBatch, res *pb.CommandResult) {
	l := p.l
	for _, m := range c.misses {
		l.s.metrics.missed.WithLabelValues(m.GetReason()).Add(float64(m.GetCount()))
	}
	if !failpoint.On(failpoint.DispatchBeforeCommit) {
		c.noteFresh(res)
	}
	var batch []*task
	for i, f := range c.fires {
		r := res.GetFires()[i]
		if req := c.reqs[i]; req != nil {
			req.reply(r, nil)
		}
		// A lost attempt is resolved either way: re-dispatched, given up,
		// or already finished by its outcome.
		delete(l.known, f.GetLostToken())
		delete(l.resolving, f.GetLostToken())
		if r.GetAccepted() {
			if !failpoint.On(failpoint.DispatchBeforeCommit) {
				batch = p.dispatchAccepted(f, r, batch)
			}
			continue
		}
		p.refused(f, r)
	}
	l.s.handoff.dispatch(batch...)
	l.chained(res.GetChained())
}

// dispatchAccepted adds an accepted fire's attempt to batch, on its way to
// the hand-off. It runs the spec the FSM accepted the fire under,
// carried in the result, not the one read while planning: a change
// committed in between is what runs, and an attempt of one generation
// never runs another's target.
func (p *pipeline) dispatchAccepted(f *pb.Fire, r *pb.FireResult, batch []*task) []*task {
	l := p.l
	run := r.GetRun()
	runID, slot := r.GetRunId(), f.GetSlotUnix()
	if run != nil {
		runID, slot = run.GetId(), run.GetSlotUnix()
	}
	spec := r.GetSpec()
	if spec == nil {
		// Accepted without a spec to take the target from: cannot happen
		// (the FSM sets it on every accepted fire); leave it to reconcile.
		l.s.log.Error("scheduler: accepted fire without its spec", "job", f.GetJob(), "run_id", runID)
		return batch
	}
	if cancelsOthers(f, spec) {
		// The FSM cancelled the job's open runs; stop their attempts (the
		// batch's first: one may be of the job). The new one waits in the
		// job's lane until they have stopped.
		l.s.handoff.dispatch(batch...)
		batch = batch[:0]
		l.s.handoff.cancelJob(f.GetJob(), r.GetToken(), errCancelOther)
	}
	t := l.task(spec, runID, slot, r.GetToken(), r.GetAttempt(), f.GetKind())
	if run != nil {
		t.a.Kind = run.GetKind() // a retry keeps its run's key
		t.carry(run)
	}
	return append(batch, t)
}

// cancelsOthers reports whether the FSM, accepting f, cancelled the job's
// open runs: a new run under overlap cancel_other, the job's or a
// trigger's own. A backfill's runs never do.
func cancelsOthers(f *pb.Fire, spec *pb.JobSpec) bool {
	overlap := spec.GetOverlap()
	switch f.GetKind() {
	case pb.FireKind_FIRE_KIND_MANUAL:
		if o := f.GetOverlap(); o != pb.Overlap_OVERLAP_UNSPECIFIED {
			overlap = o
		}
	case pb.FireKind_FIRE_KIND_SCHEDULED, pb.FireKind_FIRE_KIND_CATCHUP:
	default:
		return false
	}
	return overlap == pb.Overlap_OVERLAP_CANCEL_OTHER
}

// Refusal reasons that record nothing: proposing the same again would be
// refused again until the state changes.
var noEffect = map[string]bool{
	fsm.ReasonDuplicate:  true,
	fsm.ReasonGeneration: true,
	fsm.ReasonNotOrphan:  true,
	fsm.ReasonNotDue:     true,
	fsm.ReasonNotOpen:    true,
	fsm.ReasonStaleTerm:  true,
	fsm.ReasonMalformed:  true,
	fsm.ReasonFrozen:     true,
}

// refused records what the FSM made of a fire it did not accept, and
// rests its job if the refusal changed nothing.
func (p *pipeline) refused(f *pb.Fire, r *pb.FireResult) {
	l := p.l
	run := r.GetRun()
	switch {
	case run.GetState() == pb.RunState_RUN_STATE_MISSED:
		reason := run.GetReason()
		if reason == "" {
			reason = r.GetReason()
		}
		l.s.metrics.missed.WithLabelValues(reason).Add(float64(max(run.GetMissedCount(), 1)))
	case run.GetState() == pb.RunState_RUN_STATE_SKIPPED:
		l.s.metrics.skipped.WithLabelValues(skipRule(run.GetReason())).Inc()
	case run.GetState() == pb.RunState_RUN_STATE_UNKNOWN:
		l.s.metrics.runs.WithLabelValues(outcomeLabel(pb.RunState_RUN_STATE_UNKNOWN)).Inc()
		l.s.log.Info("run attempt finished", "job", f.GetJob(), "run_id", run.GetId(),
			"token", tokenOf(run), "attempt", len(run.GetAttempts()),
			"scheduled_at", time.Unix(run.GetSlotUnix(), 0).UTC().Format(time.RFC3339),
			"kind", kindLabel(f.GetKind()), "outcome", "unknown", "detail", run.GetReason())
	}
	// A lost attempt whose outcome came first says nothing about the job.
	if f.GetKind() != pb.FireKind_FIRE_KIND_MANUAL && f.GetLostToken() == 0 && noEffect[r.GetReason()] && run == nil {
		l.cool[f.GetJob()] = p.now.Add(refusedCooldown)
	}
	l.s.log.Debug("scheduler: fire not accepted", "job", f.GetJob(), "slot", f.GetSlotUnix(),
		"kind", kindLabel(f.GetKind()), "run_id", f.GetRunId(), "reason", r.GetReason())
}

func tokenOf(r *pb.Run) uint64 {
	if a := fsm.CurrentAttempt(r); a != nil {
		return a.GetToken()
	}
	return 0
}
