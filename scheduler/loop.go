package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/failpoint"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	// maxSleep bounds one wait, so a wall-clock jump is noticed within it.
	maxSleep = time.Second
	// maxFiresPerEntry caps the fires and misses of one FireBatch entry; a
	// bigger tick is split into entries, each proposed as soon as it is
	// planned. A job's fires never straddle two entries.
	maxFiresPerEntry = 2000
	// firstEntryFires caps a tick's first entry instead: a small entry
	// commits sooner, so a wave's first deliveries start while the rest of
	// it is still being planned and committed, instead of every fire of a
	// 2,000-fire wave waiting for one large entry.
	firstEntryFires = 250
	// fireRetry is the pause after a FireBatch failed to commit.
	fireRetry = 500 * time.Millisecond
	// refusedCooldown rests a job whose fires the FSM refused without
	// effect (duplicate, generation, not_due, ...): the state will change,
	// or the next leader will look again.
	refusedCooldown = time.Second
)

// loop is the steady state: plan what is due, commit it, dispatch it,
// sleep until the next due time (at most maxSleep), repeat.
func (l *leader) loop() {
	for l.ctx.Err() == nil {
		now := l.s.clock.Now()
		l.drainForgotten()
		worked, ok := l.tick(now)
		if worked {
			if !ok && !l.sleep(fireRetry) {
				return
			}
			continue
		}
		if !l.planAhead(now) {
			l.wait(now)
		}
	}
}

// wait sleeps until the earliest due job (planAheadLead before it, to
// plan it ahead, or the due time of what is planned ahead), a change, a
// trigger, or maxSleep, whichever comes first.
func (l *leader) wait(now time.Time) {
	wake := now.Add(maxSleep)
	if at, ok := l.heap.peek(); ok {
		if l.ahead == nil {
			at = max(at-int64(planAheadLead), now.UnixNano())
		}
		wake = time.Unix(0, min(at, wake.UnixNano()))
	}
	if l.ahead != nil && l.ahead.at.Before(wake) {
		wake = l.ahead.at
	}
	c, stop := l.s.clock.WakeAt(wake)
	defer stop()
	l.idleAt.Store(now.UnixNano())
	defer l.idleAt.Store(0)
	select {
	case <-l.ctx.Done():
	case <-l.s.kick:
	case <-c:
	}
}

// planOne re-plans one job from the state and files its work in pl. It
// returns how many fires and misses it added.
func (l *leader) planOne(name string, now time.Time, pl *planned) int {
	sj, err := l.s.state.StoredJob(name)
	if errors.Is(err, fsm.ErrNotFound) {
		// Deleted: no new slots. This node's attempts are cancelled and
		// recorded so; orphans of earlier terms are closed by the FSM on
		// re-dispatch. (Runs waiting for a retry were closed by the delete.)
		l.heap.remove(name)
		delete(l.cool, name)
		delete(l.fresh, name)
		l.s.handoff.cancelJob(name, 0, errJobDeleted)
		orphans := l.orphansOf(func(job string) bool { return job == name })
		if len(orphans) > 0 {
			g := pl.group("", nil)
			g.fires = append(g.fires, orphans...)
		}
		return len(orphans)
	}
	if err != nil {
		l.s.log.Error("scheduler: reading job", "job", name, "error", err)
		l.heap.set(name, now.Add(maxSleep).UnixNano())
		return 0
	}
	return l.planStored(name, sj, now, pl)
}

// planStored is planOne for a job read from the state.
func (l *leader) planStored(name string, sj fsm.StoredJob, now time.Time, pl *planned) int {
	job, status := sj.Job, sj.Status
	if f, ok := l.fresh[name]; ok {
		delete(l.fresh, name)
		if f.still(l, name, sj, now) {
			return 0 // the wake-up planned before the fire stands
		}
	}
	if until, ok := l.cool[name]; ok {
		if until.After(now) {
			l.heap.set(name, until.UnixNano())
			return 0
		}
		delete(l.cool, name)
	}
	sched, perr := jobSchedule(job)
	if perr != nil {
		l.s.log.Warn("scheduler: job schedule does not parse; no slots fire", "job", name, "error", perr)
	}
	p := planJob(planInput{
		job:    job,
		status: status,
		open:   l.openRuns(status),
		sched:  sched,
		now:    now,
		term:   l.term,
		self:   l.s.self,
		known:  l.isKnown,
		lost:   l.isResolving,
	})
	if p.busy() {
		g := pl.group(name, job)
		g.quiet = len(status.GetOpenRunIds()) == 0 && status.GetBufferedSlotUnix() == 0 && len(g.fires) == 0 &&
			len(p.misses) == 0 && len(p.adopt) == 0 && p.wake.After(now)
		g.fires = append(g.fires, p.fires...)
		g.misses = append(g.misses, p.misses...)
		g.adopt = append(g.adopt, p.adopt...)
	}
	switch {
	case p.wake.IsZero():
		l.heap.remove(name)
	case !p.busy() && !p.wake.After(now):
		// Due again with nothing to do would spin; cannot happen, but a
		// loop that spins starves every other job, so guard anyway.
		l.heap.set(name, now.Add(maxSleep).UnixNano())
	default:
		l.heap.set(name, p.wake.UnixNano())
	}
	return len(p.fires) + len(p.misses)
}

func (l *leader) isKnown(token uint64) bool {
	_, ok := l.known[token]
	return ok
}

// openRuns reads the job's open runs, oldest first.
func (l *leader) openRuns(status *pb.JobStatus) []*pb.Run {
	ids := status.GetOpenRunIds()
	if len(ids) == 0 {
		return nil
	}
	runs := make([]*pb.Run, 0, len(ids))
	for _, id := range ids {
		if r, err := l.s.state.Run(id); err == nil {
			runs = append(runs, r)
		}
	}
	return runs
}

type batchResult struct {
	res *pb.CommandResult
	err error
}

// propose hands one FireBatch entry to Raft; wait returns its outcome.
func (l *leader) propose(now time.Time, c *fireBatch) (wait func() batchResult) {
	cmd := &pb.Command{
		ProposedAtUnixNano: now.UnixNano(),
		Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{
			LeaderId:    l.s.self,
			Term:        l.term,
			Fires:       c.fires,
			Misses:      c.misses,
			MaxOpenRuns: l.s.maxOpenRuns,
		}},
	}
	ctx, cancel := context.WithTimeout(l.ctx, l.s.applyTimeout)
	outcome := l.s.prop.Propose(ctx, cmd)
	return func() batchResult {
		defer cancel()
		res, err := outcome()
		switch {
		case err != nil:
			return batchResult{err: err}
		case res.GetCode() != pb.ResultCode_RESULT_CODE_OK:
			return batchResult{err: fmt.Errorf("fire batch refused: %s: %s", res.GetCode(), res.GetMessage())}
		case len(res.GetFires()) != len(c.fires):
			return batchResult{err: fmt.Errorf("fire batch: %d results for %d fires", len(res.GetFires()), len(c.fires))}
		}
		return batchResult{res: res}
	}
}

// accept dispatches the accepted fires of a committed entry, in order (so
// in token order), and counts what was recorded missed. The attempts go
// to the hand-off together, under one lock: one by one, each would
// contend for it with the outcomes of the entries before.
func (l *leader) accept(now time.Time, c *fireBatch, res *pb.CommandResult) {
	for _, m := range c.misses {
		l.s.metrics.missed.WithLabelValues(m.GetReason()).Add(float64(m.GetCount()))
	}
	if !failpoint.On(failpoint.DispatchBeforeCommit) {
		l.noteFresh(c, res)
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
				batch = l.dispatchAccepted(f, r, batch)
			}
			continue
		}
		l.refused(now, f, r)
	}
	l.s.handoff.dispatch(batch...)
}

// dispatchAccepted adds an accepted fire's attempt to batch, on its way to
// the hand-off. It runs the spec the FSM accepted the fire under,
// carried in the result, not the one read while planning: a change
// committed in between is what runs, and an attempt of one generation
// never runs another's target.
func (l *leader) dispatchAccepted(f *pb.Fire, r *pb.FireResult, batch []*task) []*task {
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
	if f.GetKind() != pb.FireKind_FIRE_KIND_RETRY && f.GetKind() != pb.FireKind_FIRE_KIND_REDISPATCH &&
		spec.GetOverlap() == pb.Overlap_OVERLAP_CANCEL_OTHER {
		// The FSM cancelled the job's open runs; stop their attempts (the
		// batch's first: one may be of the job). The new one waits in the
		// job's lane until they have stopped.
		l.s.handoff.dispatch(batch...)
		batch = batch[:0]
		l.s.handoff.cancelJob(f.GetJob(), r.GetToken(), errCancelOther)
	}
	return append(batch, l.task(spec, runID, slot, r.GetToken(), r.GetAttempt(), f.GetKind()))
}

// adopt dispatches an attempt this node committed in this term without
// learning it (the FireBatch's Apply had returned an error), with the job
// as planning read it. The FSM accepted the attempt under the run's
// generation: if the job has moved to another since, its target is not
// the attempt's, and the attempt is closed CANCELLED without running.
func (l *leader) adopt(job *pb.Job, r *pb.Run) {
	cur := fsm.CurrentAttempt(r)
	if job == nil || cur == nil || l.isKnown(cur.GetToken()) {
		return
	}
	if r.GetGeneration() != job.GetGeneration() {
		l.s.log.Info("scheduler: not dispatching an attempt of an earlier generation of its job",
			"job", r.GetJob(), "run_id", r.GetId(), "token", cur.GetToken(),
			"generation", r.GetGeneration(), "job_generation", job.GetGeneration())
		l.abandon(r, cur, fmt.Sprintf("not dispatched: the job moved to generation %d", job.GetGeneration()))
		return
	}
	l.s.log.Info("scheduler: dispatching an attempt committed after its proposal failed",
		"job", r.GetJob(), "run_id", r.GetId(), "token", cur.GetToken())
	l.dispatch(job.GetSpec(), r.GetId(), r.GetSlotUnix(), cur.GetToken(), cur.GetNumber(), cur.GetKind())
}

// abandon reports an attempt of this term that never ran as CANCELLED, so
// that its run closes instead of waiting for the next leader.
func (l *leader) abandon(r *pb.Run, cur *pb.Attempt, detail string) {
	l.known[cur.GetToken()] = struct{}{} // in hand until the outcome commits
	l.unsettled.Add(1)
	c := &pb.Completion{RunId: r.GetId(), Token: cur.GetToken(), Outcome: pb.RunState_RUN_STATE_CANCELLED, Detail: detail}
	if !l.comp.add(r.GetJob(), c) {
		l.unsettled.Add(-1)
	}
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
}

func (l *leader) refused(now time.Time, f *pb.Fire, r *pb.FireResult) {
	run := r.GetRun()
	switch {
	case run.GetState() == pb.RunState_RUN_STATE_MISSED:
		reason := run.GetReason()
		if reason == "" {
			reason = r.GetReason()
		}
		l.s.metrics.missed.WithLabelValues(reason).Add(float64(max(run.GetMissedCount(), 1)))
	case run.GetState() == pb.RunState_RUN_STATE_UNKNOWN:
		l.s.metrics.runs.WithLabelValues(outcomeLabel(pb.RunState_RUN_STATE_UNKNOWN)).Inc()
		l.s.log.Info("run attempt finished", "job", f.GetJob(), "run_id", run.GetId(),
			"token", tokenOf(run), "attempt", len(run.GetAttempts()),
			"scheduled_at", time.Unix(run.GetSlotUnix(), 0).UTC().Format(time.RFC3339),
			"kind", kindLabel(f.GetKind()), "outcome", "unknown", "detail", run.GetReason())
	}
	// A lost attempt whose outcome came first says nothing about the job.
	if f.GetKind() != pb.FireKind_FIRE_KIND_MANUAL && f.GetLostToken() == 0 && noEffect[r.GetReason()] && run == nil {
		l.cool[f.GetJob()] = now.Add(refusedCooldown)
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
