package fsm

import (
	"strconv"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A backfill fires the slots of a job's schedule in [from, to) again, each
// once, in order (Backfill in the job's status). The FSM cannot compute a
// schedule (a zone's rules are the node's tzdata), so the proposer counts
// the slots and names the first, and the leader's scheduler names each
// next one as it fires a slot (Fire.next_slot_unix): the FSM keeps where
// the backfill stands and accepts only its next slot, so no slot fires
// twice, whatever happens to leaders, and none is passed over.

// Backfill overlap policies (Backfill.overlap), in the job file's words.
const (
	BackfillSkip      = "skip"
	BackfillBufferOne = "buffer_one"
	BackfillAllow     = "allow"
)

// Audit actions of backfills.
const (
	AuditBackfill       = "backfill"
	AuditBackfillCancel = "backfill_cancel"
)

// startBackfill starts the job's backfill. One runs at a time: a new one
// while one runs is ALREADY_EXISTS; a finished one is replaced.
func startBackfill(s *state, c *pb.Command, e entry) (outcome, error) {
	p := c.GetStartBackfill()
	if err := checkBackfill(p); err != nil {
		return outcome{}, err
	}
	name := p.GetJob()
	cur, ok := s.item(name)
	switch {
	case !ok:
		return outcome{}, fail(ErrNotFound, "job %q not found", name)
	case p.GetGeneration() != cur.job.GetGeneration():
		return outcome{}, fail(ErrVersionMismatch, "job %q moved to generation %d while the backfill's slots were counted on %d: retry",
			name, cur.job.GetGeneration(), p.GetGeneration())
	case cur.job.GetSpec().GetCheckin() != nil:
		return outcome{}, fail(ErrInvalid, "job %q is a check-in job: raftcron fires none of its slots, so it backfills none", name)
	case p.GetMaxSlots() > 0 && p.GetSlots() > p.GetMaxSlots():
		return outcome{}, fail(ErrLimitExceeded, "backfill of job %q: %d slots in the range, the limit (max_backfill_slots) is %d",
			name, p.GetSlots(), p.GetMaxSlots())
	case cur.status.GetBackfill().GetState() == pb.BackfillState_BACKFILL_STATE_RUNNING:
		return outcome{}, fail(ErrAlreadyExists, "job %q has a backfill running (%s): cancel it first",
			name, cur.status.GetBackfill().GetId())
	}
	bf := &pb.Backfill{
		Id:                name + "-b" + strconv.FormatUint(e.index, 10),
		FromUnix:          p.GetFromUnix(),
		ToUnix:            p.GetToUnix(),
		NextSlotUnix:      p.GetFirstSlotUnix(),
		MaxConcurrent:     p.GetMaxConcurrent(),
		Overlap:           p.GetOverlap(),
		Rerun:             p.GetRerun(),
		State:             pb.BackfillState_BACKFILL_STATE_RUNNING,
		Slots:             p.GetSlots(),
		Generation:        p.GetGeneration(),
		CreatedAtUnixNano: e.proposedAt,
		CreatedBy:         e.principal,
	}
	next := copyStatus(cur.status)
	next.Backfill = bf
	s.setStatus(cur, next)
	if s.audit.on() {
		s.appendRecord(e, &pb.AuditRecord{Action: AuditBackfill, Job: name,
			VersionBefore: cur.job.GetVersion(), VersionAfter: cur.job.GetVersion(), Changes: backfillChanges(bf)}, nil, nil)
	}
	return outcome{job: cur.job, status: next, changed: true, backfill: bf}, nil
}

// checkBackfill refuses a start_backfill no proposer of this build makes.
func checkBackfill(p *pb.StartBackfillCommand) error {
	first := p.GetFirstSlotUnix()
	switch {
	case p.GetJob() == "":
		return malformed("start_backfill.job must not be empty")
	case p.GetToUnix() <= p.GetFromUnix():
		return fail(ErrInvalid, "to: %s is not after from (%s)", unixText(p.GetToUnix()), unixText(p.GetFromUnix()))
	case p.GetSlots() == 0 || first < p.GetFromUnix() || first >= p.GetToUnix():
		return malformed("start_backfill needs its first slot inside the range and a count of slots")
	case p.GetMaxConcurrent() == 0:
		return malformed("start_backfill.max_concurrent must be at least 1")
	}
	switch p.GetOverlap() {
	case BackfillAllow:
	case BackfillSkip, BackfillBufferOne:
		if p.GetMaxConcurrent() > 1 {
			return fail(ErrInvalid, "max_concurrent: %d backfill runs at once need overlap allow, not %s",
				p.GetMaxConcurrent(), p.GetOverlap())
		}
	default:
		return malformed("start_backfill.overlap must be skip, buffer_one or allow, not %q", p.GetOverlap())
	}
	return nil
}

func backfillChanges(bf *pb.Backfill) []*pb.AuditChange {
	return []*pb.AuditChange{
		{Field: "from", After: unixText(bf.GetFromUnix())},
		{Field: "to", After: unixText(bf.GetToUnix())},
		{Field: "slots", After: strconv.FormatUint(bf.GetSlots(), 10)},
		{Field: "overlap", After: bf.GetOverlap()},
		{Field: "max_concurrent", After: strconv.FormatUint(uint64(bf.GetMaxConcurrent()), 10)},
		{Field: "rerun", After: strconv.FormatBool(bf.GetRerun())},
	}
}

// cancelBackfill stops the job's running backfill: no slot of it fires
// any more. Its runs still open run to their end.
func cancelBackfill(s *state, c *pb.Command, e entry) (outcome, error) {
	name := c.GetCancelBackfill().GetJob()
	if name == "" {
		return outcome{}, malformed("cancel_backfill.job must not be empty")
	}
	cur, ok := s.item(name)
	if !ok {
		return outcome{}, fail(ErrNotFound, "job %q not found", name)
	}
	if cur.status.GetBackfill().GetState() != pb.BackfillState_BACKFILL_STATE_RUNNING {
		return outcome{}, fail(ErrNotFound, "job %q has no backfill running", name)
	}
	next := endBackfill(cur.status, ReasonCancelRequested, e)
	s.setStatus(cur, next)
	if s.audit.on() {
		s.appendRecord(e, &pb.AuditRecord{Action: AuditBackfillCancel, Job: name,
			VersionBefore: cur.job.GetVersion(), VersionAfter: cur.job.GetVersion()}, nil, nil)
	}
	return outcome{job: cur.job, status: next, changed: true, backfill: next.GetBackfill()}, nil
}

// endBackfill is st with its running backfill cancelled for reason; st
// itself when none runs.
func endBackfill(st *pb.JobStatus, reason string, e entry) *pb.JobStatus {
	bf := st.GetBackfill()
	if bf.GetState() != pb.BackfillState_BACKFILL_STATE_RUNNING {
		return st
	}
	nb := proto.CloneOf(bf)
	nb.State = pb.BackfillState_BACKFILL_STATE_CANCELLED
	nb.Reason = reason
	nb.FinishedAtUnixNano = e.proposedAt
	next := copyStatus(st)
	next.Backfill = nb
	return next
}

// backfill decides the slot f names of the job's running backfill: it must
// be the backfill's next one. Refusals (no_backfill, generation, not_next,
// paused, backfill_busy, overlap_wait) change nothing: the leader proposes
// the slot again once things changed. Otherwise the slot is skipped (a
// successful run of it is in the ledger), recorded missed (overlap skip)
// or fired under a new token as a run of kind BACKFILL, and the backfill
// moves on to f's next slot. A slot a calendar or a freeze stops is
// recorded SKIPPED (kind BACKFILL) with its reason, as the slot itself was.
func (b *batch) backfill(pos int, f *pb.Fire, res *pb.FireResult) {
	it, ok := b.s.item(f.GetJob())
	if !ok {
		res.Reason = ReasonGone
		return
	}
	st, spec := it.status, it.job.GetSpec()
	bf := st.GetBackfill()
	switch {
	case bf.GetState() != pb.BackfillState_BACKFILL_STATE_RUNNING || bf.GetGeneration() != it.job.GetGeneration():
		res.Reason = ReasonNoBackfill
		return
	case f.GetGeneration() != it.job.GetGeneration():
		res.Reason = ReasonGeneration
		return
	case f.GetSlotUnix() != bf.GetNextSlotUnix():
		res.Reason = ReasonNotNext
		return
	case f.GetNextSlotUnix() <= f.GetSlotUnix():
		res.Reason = ReasonMalformed // a backfill never goes back
		return
	case spec.GetPaused():
		res.Reason = ReasonPaused
		return
	}
	running, others := b.s.openRunsByKind(st)
	if running >= int(bf.GetMaxConcurrent()) || (b.atOpenLimit(st) && bf.GetOverlap() == BackfillAllow) {
		res.Reason = ReasonBackfillBusy
		return
	}
	slot := f.GetSlotUnix()
	next := copyStatus(st)
	nb := proto.CloneOf(bf)
	nb.NextSlotUnix = min(f.GetNextSlotUnix(), bf.GetToUnix())
	next.Backfill = nb
	if why := b.stopReason(spec, slot); why != "" {
		nb.Skipped++ // a deferring freeze defers no past slot: it skips it
		b.recordRun(it, next, pos, pb.FireKind_FIRE_KIND_BACKFILL, slot, pb.RunState_RUN_STATE_SKIPPED, why, res)
		return
	}
	switch {
	case !bf.GetRerun() && b.s.succeeded(it, slot):
		nb.Skipped++
		b.s.settleBackfill(next, "")
		b.s.setStatus(it, next)
		res.Reason = ReasonAlreadySucceeded
		return
	case others > 0 && bf.GetOverlap() == BackfillBufferOne:
		res.Reason = ReasonOverlapWait
		return
	case others > 0 && bf.GetOverlap() == BackfillSkip:
		nb.Missed++
		b.recordMissed(it, next, pos, pb.FireKind_FIRE_KIND_BACKFILL, slot, ReasonOverlapSkipped, res)
		return
	}
	nb.Fired++
	b.accept(it, next, f, slot, bf.GetOverlap() == BackfillAllow, nil, res)
}

// stopReason is what stops the slot of the job of spec as things stand (a
// calendar or a freeze), or "".
func (b *batch) stopReason(spec *pb.JobSpec, slot int64) string {
	if !b.s.stops(spec) {
		return ""
	}
	why, _ := decide(b.s, spec, slot)
	return why
}

// openRunsByKind counts the job's open runs: its backfill's, and the
// others.
func (s *state) openRunsByKind(st *pb.JobStatus) (backfill, others int) {
	for _, id := range st.GetOpenRunIds() {
		if r, ok := s.run(id); ok && r.GetKind() == pb.FireKind_FIRE_KIND_BACKFILL {
			backfill++
		} else {
			others++
		}
	}
	return backfill, others
}

// succeeded reports whether the ledger holds a successful run of the job's
// slot: scheduled, caught up or backfilled. The ledger keeps the newest
// history_limit finished runs of a job, so an older success is not seen,
// and its slot is fired again (with the slot's own idempotency key).
func (s *state) succeeded(it jobItem, slot int64) bool {
	found := false
	s.runsOf(it.name, func(r *pb.Run) bool {
		if r.GetSlotUnix() == slot && r.GetState() == pb.RunState_RUN_STATE_SUCCEEDED && owns(it, r) {
			switch r.GetKind() {
			case pb.FireKind_FIRE_KIND_SCHEDULED, pb.FireKind_FIRE_KIND_CATCHUP, pb.FireKind_FIRE_KIND_BACKFILL:
				found = true
			}
		}
		return !found
	})
	return found
}

// settleBackfill marks the running backfill of the fresh status next DONE
// once every slot was handled and none of its runs is open (but the one
// with id finishing, which the caller is recording).
func (s *state) settleBackfill(next *pb.JobStatus, finishing string) {
	bf := next.GetBackfill()
	if bf.GetState() != pb.BackfillState_BACKFILL_STATE_RUNNING || bf.GetNextSlotUnix() < bf.GetToUnix() {
		return
	}
	for _, id := range next.GetOpenRunIds() {
		if r, ok := s.run(id); ok && id != finishing && isOpen(r.GetState()) && r.GetKind() == pb.FireKind_FIRE_KIND_BACKFILL {
			return
		}
	}
	nb := proto.CloneOf(bf) // next shares its backfill with the stored status
	nb.State = pb.BackfillState_BACKFILL_STATE_DONE
	nb.FinishedAtUnixNano = s.applying
	next.Backfill = nb
}
