package fsm

import (
	"slices"
	"strconv"

	"github.com/raftcron/raftcron/internal/failpoint"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// fireBatch applies one tick of a leader's scheduler: first the misses,
// then the fires, each checked against the state as the ones before it left
// it. It never fails as a whole: each fire gets its own verdict, in order.
func fireBatch(s *state, c *pb.Command, e entry) (outcome, error) {
	fb := c.GetFireBatch()
	fires := fb.GetFires()
	if e.term != 0 && fb.GetTerm() != e.term {
		return staleTerm(fires), nil
	}
	b := batch{s: s, e: e, leader: fb.GetLeaderId(), term: fb.GetTerm(), slab: newRunSlab(len(fires)),
		pos: len(fb.GetMisses()) + len(fires)}
	if s.atLeast(version2) { // version 1 ignores all three
		b.maxOpen, b.generations, b.lostTokens = fb.GetMaxOpenRuns(), true, true
	}
	misses := fb.GetMisses()
	for i, m := range misses {
		b.miss(i, m)
	}
	// One allocation holds every result.
	backing := make([]pb.FireResult, len(fires))
	results := make([]*pb.FireResult, len(fires))
	for i, f := range fires {
		results[i] = &backing[i]
		b.fire(len(misses)+i, f, results[i])
	}
	return outcome{changed: s.tx.isDirty(), fires: results, chained: b.chained}, nil
}

// staleTerm refuses a whole batch committed in another term than the one its
// leader proposed it in: it reached the log through some other node (a
// forward) or outlived its leader's term. Its proposer must not dispatch it,
// and refusing it here makes sure no one does (G2).
func staleTerm(fires []*pb.Fire) outcome {
	results := make([]*pb.FireResult, len(fires))
	for i := range fires {
		results[i] = &pb.FireResult{Reason: ReasonStaleTerm}
	}
	return outcome{fires: results}
}

// batch is what every fire of one FireBatch shares.
type batch struct {
	s      *state
	e      entry
	leader string
	term   uint64
	// maxOpen caps one job's open runs under overlap allow; 0: no cap.
	maxOpen uint32
	// generations: manual, retry and re-dispatch fires are checked
	// against the generation they name (cluster version 2).
	generations bool
	// lostTokens: a re-dispatch may name the attempt of this term whose
	// worker was lost by its token (cluster version 2).
	lostTokens bool
	slab       *runSlab // the runs of the results
	// pos numbers the records the chains make (chain.go), after the
	// batch's own fires and misses.
	pos int
	// chained are the runs the chains fired or recorded, for the result.
	chained []*pb.Run
}

// atOpenLimit reports whether a job whose status is st may open no more
// runs in this batch.
func (b *batch) atOpenLimit(st *pb.JobStatus) bool {
	return b.maxOpen > 0 && len(st.GetOpenRunIds()) >= int(b.maxOpen)
}

func (b *batch) fire(pos int, f *pb.Fire, res *pb.FireResult) {
	switch f.GetKind() {
	case pb.FireKind_FIRE_KIND_SCHEDULED, pb.FireKind_FIRE_KIND_CATCHUP:
		b.scheduled(pos, f, res)
	case pb.FireKind_FIRE_KIND_MANUAL:
		b.manual(f, res)
	case pb.FireKind_FIRE_KIND_RETRY:
		b.retry(f, res)
	case pb.FireKind_FIRE_KIND_REDISPATCH:
		b.redispatch(f, res)
	case pb.FireKind_FIRE_KIND_CHAINED:
		// Chained runs are fired in the entry that records their parents'
		// outcome, never proposed; but for the negative control.
		if !failpoint.On(failpoint.ChainSeparateEntry) {
			res.Reason = ReasonMalformed
			return
		}
		b.separateChained(f, res)
	case pb.FireKind_FIRE_KIND_BACKFILL:
		b.backfill(pos, f, res)
	default:
		res.Reason = ReasonMalformed
	}
}

// scheduled decides a slot of the job's schedule. Refusals (gone,
// generation, duplicate, frozen) change nothing; a paused job, a slot
// outside start_at..end_at or an overlap skip is recorded as a MISSED run,
// a slot a calendar or freeze stops as a SKIPPED one (or held back by a
// deferring freeze); all of these but the refusals advance the cursor to
// the slot.
func (b *batch) scheduled(pos int, f *pb.Fire, res *pb.FireResult) {
	it, ok := b.s.item(f.GetJob())
	switch {
	case !ok:
		res.Reason = ReasonGone
		return
	case f.GetGeneration() != it.job.GetGeneration():
		res.Reason = ReasonGeneration
		return
	case it.job.GetSpec().GetCheckin() != nil:
		res.Reason = ReasonCheckinJob
		return
	}
	st, slot := it.status, f.GetSlotUnix()
	// buffer_one keeps a slot it already passed the cursor for; firing it
	// once the open run is gone is its release, not a duplicate.
	release := f.GetKind() == pb.FireKind_FIRE_KIND_SCHEDULED && st.GetBufferedSlotUnix() != 0 &&
		slot == st.GetBufferedSlotUnix() && len(st.GetOpenRunIds()) == 0
	// A deferring freeze held the slot back; its catch-up fire at the lift
	// is its release, once no freeze matching the job is in force.
	deferred := f.GetKind() == pb.FireKind_FIRE_KIND_CATCHUP && st.GetDeferredSlotUnix() != 0 &&
		slot == st.GetDeferredSlotUnix()
	spec := it.job.GetSpec()
	if deferred {
		if _, ok := frozen(b.s, spec, b.e.seconds()); ok {
			res.Reason = ReasonFrozen
			return
		}
	}
	if !release && !deferred && slot <= st.GetCursorUnix() && !failpoint.On(failpoint.SkipSlotDedupe) {
		res.Reason = ReasonDuplicate // G1: a slot at or before the cursor never fires again
		return
	}
	next := copyStatus(st)
	next.CursorUnix = max(next.CursorUnix, slot)
	if release {
		next.BufferedSlotUnix = 0
		if parents := st.GetBufferedParents(); len(parents) > 0 {
			next.BufferedParents = nil
			b.releaseChained(it, next, pos, slot, parents, res)
			return
		}
	}
	if deferred {
		next.DeferredSlotUnix = 0
	}
	if reason := gate(spec, slot); reason != "" {
		b.recordMissed(it, next, pos, f.GetKind(), slot, reason, res)
		return
	}
	if b.s.stops(spec) && b.stopped(it, next, pos, f.GetKind(), slot, deferred, res) {
		return
	}
	limited := b.s.atLeast(version3) // max_runs and the count it reads
	if limited && spec.GetMaxRuns() > 0 && next.GetSlotsFired() >= uint64(spec.GetMaxRuns()) {
		b.recordMissed(it, next, pos, f.GetKind(), slot, ReasonMaxRuns, res)
		return
	}
	parents, met := b.slotDependencies(it, next, pos, f.GetKind(), slot, res)
	if !met {
		return
	}
	if len(st.GetOpenRunIds()) > 0 {
		switch spec.GetOverlap() {
		case pb.Overlap_OVERLAP_ALLOW:
			if b.atOpenLimit(st) {
				b.recordMissed(it, next, pos, f.GetKind(), slot, ReasonOpenRunsLimit, res)
				return
			}
		case pb.Overlap_OVERLAP_CANCEL_OTHER:
			b.cancelOpen(next)
		case pb.Overlap_OVERLAP_BUFFER_ONE:
			if next.BufferedSlotUnix == 0 {
				next.BufferedSlotUnix = slot
				b.s.setStatus(it, next)
				res.Reason = ReasonBuffered
				return
			}
			b.recordMissed(it, next, pos, f.GetKind(), slot, ReasonOverlapSkipped, res)
			return
		default: // skip (a stored spec states its policy)
			b.recordMissed(it, next, pos, f.GetKind(), slot, ReasonOverlapSkipped, res)
			return
		}
	}
	if parents != nil {
		next.PendingParents = nil // the set is spent on this run
	}
	last := limited && countFired(spec, next)
	b.accept(it, next, f, slot, false, parents, res)
	if last {
		b.s.pauseItself(it, next, NoteMaxRuns, b.e)
	}
}

// stopped records the slot SKIPPED if a calendar or a freeze stops it, or
// holds it back for a deferring freeze, and reports whether it did. A
// deferred slot's release was decided against the freezes already: only
// the calendars decide it again.
func (b *batch) stopped(it jobItem, next *pb.JobStatus, pos int, kind pb.FireKind, slot int64, deferred bool, res *pb.FireResult) bool {
	var src stopSource = b.s
	if deferred {
		src = calendarsOnly{b.s}
	}
	reason, deferring := decide(src, it.job.GetSpec(), slot)
	switch {
	case reason == "":
		return false
	case deferring && it.job.GetSpec().GetCatchup().GetPolicy() != pb.CatchupPolicy_CATCHUP_POLICY_NONE:
		b.hold(it, next, pos, slot, reason, res)
	default:
		b.recordRun(it, next, pos, kind, slot, pb.RunState_RUN_STATE_SKIPPED, reason, res)
	}
	return true
}

// hold keeps the slot back until its deferring freeze lifts: only the
// latest slot inside the freeze fires then, so the one held before it is
// recorded SKIPPED now.
func (b *batch) hold(it jobItem, next *pb.JobStatus, pos int, slot int64, reason string, res *pb.FireResult) {
	if prev := next.DeferredSlotUnix; prev != 0 && prev != slot {
		why, _ := decide(b.s, it.job.GetSpec(), prev)
		if why == "" {
			why = reason
		}
		r := b.recordedRun(it, pos, pb.FireKind_FIRE_KIND_SCHEDULED, prev, prev, 1, pb.RunState_RUN_STATE_SKIPPED, why)
		b.s.noteFinished(next, r)
		b.s.putRun(r)
	}
	next.DeferredSlotUnix = slot
	b.s.setStatus(it, next)
	res.Reason = ReasonDeferred
}

// calendarsOnly is a state seen without its freezes.
type calendarsOnly struct{ *state }

func (calendarsOnly) eachFreeze(func(freezeItem) bool) {}

// gate says why a slot of the job may not run at all, or "".
func gate(spec *pb.JobSpec, slot int64) string {
	switch {
	case spec.GetPaused():
		return ReasonPaused
	case spec.GetStartAt() != nil && before(slot, spec.GetStartAt().GetSeconds(), spec.GetStartAt().GetNanos()):
		return ReasonBeforeStart
	case spec.GetEndAt() != nil && slot > spec.GetEndAt().GetSeconds():
		return ReasonAfterEnd
	}
	return ""
}

// before reports whether the whole second slot comes before the instant
// (sec, nanos), without converting to nanoseconds, which could overflow.
func before(slot, sec int64, nanos int32) bool {
	return slot < sec || (slot == sec && nanos > 0)
}

// manual commits a triggered run now. It has its own identity (kind MANUAL,
// its own run id and token) and leaves the cursor alone, so it can neither
// hide nor repeat a scheduled slot. Like a slot, it is for one generation
// of the job: the spec the leader planned it with.
func (b *batch) manual(f *pb.Fire, res *pb.FireResult) {
	it, ok := b.s.item(f.GetJob())
	if !ok {
		res.Reason = ReasonGone
		return
	}
	// Idempotency first: a retried trigger gets the first call's run even if
	// the job was paused in between.
	if rid := f.GetRequestId(); rid != "" {
		if r := b.s.requested(it, rid); r != nil {
			res.Reason, res.RunId, res.Run = ReasonDuplicateRequest, r.GetId(), b.slab.clone(r)
			return
		}
	}
	if b.generations && f.GetGeneration() != it.job.GetGeneration() {
		res.Reason = ReasonGeneration
		return
	}
	spec := it.job.GetSpec()
	if spec.GetCheckin() != nil {
		res.Reason = ReasonCheckinJob // it runs elsewhere: it checks in
		return
	}
	if spec.GetPaused() && !f.GetForce() {
		res.Reason = ReasonPaused
		return
	}
	next := copyStatus(it.status)
	overlap := spec.GetOverlap()
	if o := f.GetOverlap(); o != pb.Overlap_OVERLAP_UNSPECIFIED && b.s.atLeast(version3) {
		overlap = o // the trigger's own policy for its run
	}
	if len(next.OpenRunIds) > 0 {
		switch overlap {
		case pb.Overlap_OVERLAP_ALLOW:
			if b.atOpenLimit(next) {
				res.Reason = ReasonOpenRunsLimit
				return
			}
		case pb.Overlap_OVERLAP_CANCEL_OTHER:
			b.cancelOpen(next)
		default: // skip, buffer_one: a trigger is not a slot to buffer
			res.Reason = ReasonOverlapSkipped
			return
		}
	}
	concurrent := overlap == pb.Overlap_OVERLAP_ALLOW && spec.GetOverlap() != pb.Overlap_OVERLAP_ALLOW
	b.accept(it, next, f, b.e.seconds(), concurrent, nil, res)
}

// requested finds the job's manual run with that request id, among its own
// runs, not those a deleted job of its name left (history.go).
func (s *state) requested(it jobItem, requestID string) *pb.Run {
	var found *pb.Run
	s.runsOf(it.name, func(r *pb.Run) bool {
		if r.GetKind() == pb.FireKind_FIRE_KIND_MANUAL && r.GetRequestId() == requestID && owns(it, r) {
			found = r
		}
		return found == nil
	})
	return found
}

// retry attempts again a run whose last attempt failed, once its backoff
// has passed.
func (b *batch) retry(f *pb.Fire, res *pb.FireResult) {
	r, ok := b.s.run(f.GetRunId())
	if !ok || r.GetJob() != f.GetJob() || r.GetState() != pb.RunState_RUN_STATE_RETRYING ||
		isCheckin(r) {
		res.Reason = ReasonNotOpen
		return
	}
	it, owned := b.s.owner(r)
	if !owned {
		b.cancelForDeletedJob(r, res)
		return
	}
	switch {
	case !b.generations:
	case f.GetGeneration() != r.GetGeneration():
		res.Reason = ReasonGeneration
		return
	case r.GetGeneration() != it.job.GetGeneration():
		// The target it would retry is gone; an update normally closes
		// such runs at once (putJob).
		b.closeRetry(it, r, res)
		return
	}
	if r.GetNextAttemptAtUnixNano() > b.e.proposedAt {
		res.Reason = ReasonNotDue
		return
	}
	b.reattempt(it, r, pb.FireKind_FIRE_KIND_RETRY, res)
}

// closeRetry cancels a run of an earlier generation that waits for a
// retry: no attempt of it may start under the job's new target.
func (b *batch) closeRetry(it jobItem, r *pb.Run, res *pb.FireResult) {
	nr := cancelled(r, ReasonGeneration, b.e)
	next := copyStatus(it.status)
	next.OpenRunIds = removeID(next.OpenRunIds, nr.GetId())
	b.s.noteFinished(next, nr)
	b.s.setStatus(it, next)
	b.s.putRun(nr)
	res.Reason, res.RunId, res.Run = ReasonGeneration, nr.GetId(), b.slab.clone(nr)
}

// redispatch resolves a run whose attempt nobody will report on: one an
// earlier leader dispatched and never heard back about (G4), or, with
// lost_token, one of this term whose worker was lost. at_least_once runs
// it again under a new token, at_most_once gives it up as UNKNOWN. A run of
// an earlier generation than the job's is given up too: its target is gone,
// and running the new one under the old slot's idempotency key would be a
// different job.
func (b *batch) redispatch(f *pb.Fire, res *pb.FireResult) {
	r, ok := b.s.run(f.GetRunId())
	cur := CurrentAttempt(r)
	if !ok || r.GetJob() != f.GetJob() || r.GetState() != pb.RunState_RUN_STATE_DISPATCHED ||
		isCheckin(r) || cur == nil || cur.GetState() != pb.RunState_RUN_STATE_DISPATCHED || !b.unresolved(cur, f.GetLostToken()) {
		res.Reason = ReasonNotOrphan
		return
	}
	it, owned := b.s.owner(r)
	if !owned {
		b.cancelForDeletedJob(r, res)
		return
	}
	switch {
	case b.generations && f.GetGeneration() != r.GetGeneration():
		res.Reason = ReasonGeneration
	case it.job.GetSpec().GetDelivery() == pb.Delivery_DELIVERY_AT_MOST_ONCE:
		why := ReasonLeaderChanged
		if b.lostTokens && f.GetLostToken() != 0 {
			why = ReasonWorkerLost
		}
		b.giveUp(it, r, why, ReasonUnknown, res)
	case b.generations && r.GetGeneration() != it.job.GetGeneration():
		b.giveUp(it, r, ReasonGeneration, ReasonGeneration, res)
	default:
		b.reattempt(it, r, pb.FireKind_FIRE_KIND_REDISPATCH, res)
	}
}

// unresolved reports whether the executing attempt cur may be resolved by a
// re-dispatch: the lost one named by its token, or else any of an earlier
// term. A token that is no longer current means the attempt's outcome or a
// later attempt came first.
func (b *batch) unresolved(cur *pb.Attempt, lostToken uint64) bool {
	if b.lostTokens && lostToken != 0 {
		return cur.GetToken() == lostToken
	}
	return cur.GetTerm() < b.term
}

// giveUp marks an unresolved attempt UNKNOWN, with why as the run's reason:
// it may have run, so it must not run again. The fire is refused with
// refusal.
func (b *batch) giveUp(it jobItem, r *pb.Run, why, refusal string, res *pb.FireResult) {
	a := copyAttempt(CurrentAttempt(r))
	a.State = pb.RunState_RUN_STATE_UNKNOWN
	nr := copyRun(r)
	nr.Attempts = replaceLast(r.GetAttempts(), a)
	nr.State = pb.RunState_RUN_STATE_UNKNOWN
	nr.Reason = why
	nr.FinishedAtUnixNano = b.e.proposedAt
	next := copyStatus(it.status)
	next.OpenRunIds = removeID(next.OpenRunIds, nr.GetId())
	b.s.noteFinished(next, nr)
	b.s.setStatus(it, next)
	b.s.putRun(nr)
	res.Reason, res.RunId, res.Run = refusal, nr.GetId(), b.slab.clone(nr)
	b.parentFinished(nr)
}

// cancelForDeletedJob finishes an open run whose job was deleted: no new
// attempt of it may start.
func (b *batch) cancelForDeletedJob(r *pb.Run, res *pb.FireResult) {
	nr := cancelled(r, ReasonDeleted, b.e)
	b.s.putRun(nr)
	res.Reason, res.RunId, res.Run = ReasonGone, nr.GetId(), b.slab.clone(nr)
}

// reattempt adds an attempt under a new token to an open run. A re-dispatch
// supersedes the attempt it replaces; a retry follows one that already has
// its outcome.
func (b *batch) reattempt(it jobItem, r *pb.Run, kind pb.FireKind, res *pb.FireResult) {
	token := b.s.nextToken()
	prev := r.GetAttempts()
	atts := make([]*pb.Attempt, len(prev)+1)
	copy(atts, prev)
	if kind == pb.FireKind_FIRE_KIND_REDISPATCH {
		a := copyAttempt(CurrentAttempt(r))
		a.State = pb.RunState_RUN_STATE_SUPERSEDED
		atts[len(prev)-1] = a
	}
	n := uint32(len(atts))
	atts[len(prev)] = b.attempt(n, token, kind)
	nr := copyRun(r)
	nr.Attempts = atts
	nr.State = pb.RunState_RUN_STATE_DISPATCHED
	nr.NextAttemptAtUnixNano = 0
	next := copyStatus(it.status)
	next.LatestToken = token
	b.s.setStatus(it, next)
	b.s.putRun(nr)
	res.Accepted, res.Token, res.RunId, res.Attempt, res.Run = true, token, nr.GetId(), n, b.slab.clone(nr)
	res.Spec = it.job.GetSpec()
}

// accept commits a new run for the fire f with its first attempt: the only
// place, with reattempt, where a token is issued. next is the job's fresh
// status, stored here. concurrent: the run's attempts may run beside the
// job's other runs although the job's overlap policy is not allow; parents,
// the runs whose outcomes met the job's dependencies (chains).
func (b *batch) accept(it jobItem, next *pb.JobStatus, f *pb.Fire, slot int64, concurrent bool,
	parents []*pb.RunRef, res *pb.FireResult) {
	kind := f.GetKind()
	token := b.s.nextToken()
	r, a := firstRun()
	r.Job = it.name
	r.Generation = it.job.GetGeneration()
	r.SlotUnix = slot
	r.Kind = kind
	r.State = pb.RunState_RUN_STATE_DISPATCHED
	r.CreatedAtUnixNano = b.e.proposedAt
	r.RequestId = f.GetRequestId()
	r.JitterMs = f.GetJitterMs()
	r.Payload = f.GetPayload()
	r.Concurrent = concurrent
	r.Parents = parents
	b.fillAttempt(a, 1, token, kind)
	b.s.putNewRun(r, firedRunID(it.name, token))
	next.LatestToken = token
	next.OpenRunIds = appendID(next.OpenRunIds, r.Id)
	late := b.lateFire(it, next, kind, slot)
	b.s.setStatus(it, next)
	b.alertOnFire(it, r, late)
	res.Accepted, res.Token, res.RunId, res.Attempt, res.Run = true, token, r.Id, 1, b.slab.clone(r)
	res.Spec = it.job.GetSpec()
}

func (b *batch) attempt(n uint32, token uint64, kind pb.FireKind) *pb.Attempt {
	a := &pb.Attempt{}
	b.fillAttempt(a, n, token, kind)
	return a
}

// fillAttempt makes the zero a the attempt n of a run, just dispatched.
func (b *batch) fillAttempt(a *pb.Attempt, n uint32, token uint64, kind pb.FireKind) {
	a.Number = n
	a.Token = token
	a.Kind = kind
	a.NodeId = b.leader
	a.Term = b.term
	a.DispatchedAtUnixNano = b.e.proposedAt
	a.State = pb.RunState_RUN_STATE_DISPATCHED
}

// cancelOpen cancels every open run of the job (overlap cancel_other).
func (b *batch) cancelOpen(next *pb.JobStatus) {
	for _, id := range next.OpenRunIds {
		if r, ok := b.s.run(id); ok {
			nr := cancelled(r, ReasonCancelOther, b.e)
			b.s.noteFinished(next, nr)
			b.s.putRun(nr)
		}
	}
	next.OpenRunIds = nil
}

// cancelled is r finished as CANCELLED; an attempt still executing is
// cancelled with it, so its late outcome is superseded.
func cancelled(r *pb.Run, reason string, e entry) *pb.Run {
	nr := copyRun(r)
	nr.State = pb.RunState_RUN_STATE_CANCELLED
	nr.Reason = reason
	nr.FinishedAtUnixNano = e.proposedAt
	nr.NextAttemptAtUnixNano = 0
	if cur := CurrentAttempt(r); cur != nil && cur.GetState() == pb.RunState_RUN_STATE_DISPATCHED {
		a := copyAttempt(cur)
		a.State = pb.RunState_RUN_STATE_CANCELLED
		nr.Attempts = replaceLast(r.GetAttempts(), a)
	}
	return nr
}

// recordMissed stores a MISSED run for one slot given up and the job's
// status next, whose cursor the caller already advanced.
func (b *batch) recordMissed(it jobItem, next *pb.JobStatus, pos int, kind pb.FireKind, slot int64, reason string, res *pb.FireResult) {
	b.recordRun(it, next, pos, kind, slot, pb.RunState_RUN_STATE_MISSED, reason, res)
}

// recordRun stores a run that was not dispatched, MISSED or SKIPPED, for
// one slot, and the job's status next, whose cursor the caller already
// advanced.
func (b *batch) recordRun(it jobItem, next *pb.JobStatus, pos int, kind pb.FireKind, slot int64, state pb.RunState, reason string, res *pb.FireResult) {
	b.recordWith(it, next, pos, kind, slot, state, reason, nil, res)
}

// recordWith is recordRun with the parents the record stands for
// (chains): the set of parent runs of a chained fire that did not fire, or
// the pending ones a slot found unmet.
func (b *batch) recordWith(it jobItem, next *pb.JobStatus, pos int, kind pb.FireKind, slot int64, state pb.RunState,
	reason string, parents []*pb.RunRef, res *pb.FireResult) {
	r := b.recordedRun(it, pos, kind, slot, slot, 1, state, reason)
	r.Parents = parents
	b.s.noteFinished(next, r)
	b.s.setStatus(it, next)
	b.s.putRun(r)
	res.Reason, res.RunId, res.Run = reason, r.GetId(), b.slab.clone(r)
}

// miss records a range of slots the leader gave up, if it still concerns
// the job: same generation and beyond the cursor, and for the slots of a
// check-in job that got no ping, only once the grace of every one has
// passed by the entry's time. Anything else is ignored.
func (b *batch) miss(pos int, m *pb.Miss) {
	it, ok := b.s.item(m.GetJob())
	if !ok || m.GetGeneration() != it.job.GetGeneration() || m.GetToSlotUnix() <= it.status.GetCursorUnix() {
		return
	}
	if spec := it.job.GetSpec(); spec.GetCheckin() != nil && m.GetReason() == ReasonNoCheckin &&
		!graceOver(b.e.proposedAt, m.GetToSlotUnix(), spec) {
		return
	}
	next := copyStatus(it.status)
	next.CursorUnix = m.GetToSlotUnix()
	r := b.recordedRun(it, pos, pb.FireKind_FIRE_KIND_SCHEDULED, m.GetFromSlotUnix(), m.GetToSlotUnix(), m.GetCount(),
		pb.RunState_RUN_STATE_MISSED, m.GetReason())
	b.s.noteFinished(next, r)
	b.s.setStatus(it, next)
	b.s.putRun(r)
}

// recordedRun is the record of slots from..to (count of them) given up
// without dispatch, in state MISSED or SKIPPED.
func (b *batch) recordedRun(it jobItem, pos int, kind pb.FireKind, from, to int64, count uint64, state pb.RunState, reason string) *pb.Run {
	return &pb.Run{
		Id:                 b.s.newRunID(missedRunID(it.name, b.e.index, pos)),
		Job:                it.name,
		Generation:         it.job.GetGeneration(),
		SlotUnix:           from,
		Kind:               kind,
		State:              state,
		Reason:             reason,
		CreatedAtUnixNano:  b.e.proposedAt,
		FinishedAtUnixNano: b.e.proposedAt,
		LastSlotUnix:       to,
		MissedCount:        count,
	}
}

// noteFinished records a finished run in its job's fresh status next. The
// caller removes it from open_run_ids if it was open. From cluster version
// 3 it also counts the failures in a row and dates the last success, which
// alert rules read (alert.go), and settles a backfill's run.
func (s *state) noteFinished(next *pb.JobStatus, r *pb.Run) {
	next.LastRunId = r.GetId()
	next.LastOutcome = r.GetState()
	next.LastFinishedAtUnixNano = r.GetFinishedAtUnixNano()
	v3 := s.atLeast(version3)
	switch r.GetState() {
	case pb.RunState_RUN_STATE_SUCCEEDED:
		next.Succeeded++
		if v3 {
			next.ConsecutiveFailures = 0
			next.LastSuccessUnixNano = r.GetFinishedAtUnixNano()
		}
	case pb.RunState_RUN_STATE_FAILED, pb.RunState_RUN_STATE_FENCED, pb.RunState_RUN_STATE_DEADLINE_EXCEEDED:
		next.Failed++
		if v3 {
			next.ConsecutiveFailures++
		}
	case pb.RunState_RUN_STATE_MISSED:
		next.Missed += r.GetMissedCount()
	}
	if r.GetKind() == pb.FireKind_FIRE_KIND_BACKFILL {
		s.settleBackfill(next, r.GetId())
	}
}

// replaceLast is a fresh copy of atts with the last one replaced by a.
func replaceLast(atts []*pb.Attempt, a *pb.Attempt) []*pb.Attempt {
	out := slices.Clone(atts)
	out[len(out)-1] = a
	return out
}

// appendID and removeID return fresh slices: the old one may be shared by a
// stored status.
func appendID(ids []string, id string) []string {
	out := make([]string, len(ids)+1)
	copy(out, ids)
	out[len(ids)] = id
	return out
}

func removeID(ids []string, id string) []string {
	i := slices.Index(ids, id)
	if i < 0 {
		return ids
	}
	out := make([]string, 0, len(ids)-1)
	return append(append(out, ids[:i]...), ids[i+1:]...)
}

// firedRunID is "<job>-<token of the first attempt>".
func firedRunID(job string, token uint64) string {
	var buf [96]byte
	b := append(buf[:0], job...)
	b = append(b, '-')
	return string(strconv.AppendUint(b, token, 10))
}

// missedRunID is "<job>-m<raft index>-<position in the batch>".
func missedRunID(job string, index uint64, pos int) string {
	var buf [96]byte
	b := append(buf[:0], job...)
	b = append(b, "-m"...)
	b = strconv.AppendUint(b, index, 10)
	b = append(b, '-')
	return string(strconv.AppendInt(b, int64(pos), 10))
}
