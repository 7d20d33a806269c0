package fsm

import (
	"fmt"
	"time"

	"github.com/raftcron/raftcron/alert/event"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The places where the run ledger meets alerts. Each costs one check for
// a state without channels (alertState.active), and O(1) for a job without
// expectations, so the fire path stays where it was.

// lateFire judges a slot's first attempt, fired into the status next of
// job it (not yet stored): dispatched after slot + expect.start_within, it
// is late, once per slot (next.late_slot_unix). The caller raises the
// event once the run is stored.
func (b *batch) lateFire(it jobItem, next *pb.JobStatus, kind pb.FireKind, slot int64) bool {
	if kind != pb.FireKind_FIRE_KIND_SCHEDULED && kind != pb.FireKind_FIRE_KIND_CATCHUP {
		return false
	}
	sw := it.job.GetSpec().GetExpect().GetStartWithin()
	if sw == nil || !b.s.alerts.active() || slot <= next.GetLateSlotUnix() {
		return false
	}
	if b.e.proposedAt <= addSaturating(slot*int64(time.Second), sw.AsDuration()) {
		return false
	}
	next.LateSlotUnix = slot
	return true
}

// alertOnFire runs once the slot's new run r is stored: its too_long
// deadline, and the late event lateFire found.
func (b *batch) alertOnFire(it jobItem, r *pb.Run, late bool) {
	b.s.alerts.ix.trackDuration(it.job.GetSpec(), r)
	if late {
		it, _ = b.s.item(it.name)
		b.s.raise(it, happening{name: event.Late, run: r, slot: r.GetSlotUnix(), token: tokenOf(r),
			reason: "dispatched after slot + expect.start_within (" + it.job.GetSpec().GetExpect().GetStartWithin().AsDuration().String() + ")"}, b.e)
	}
}

// alertOnFinish raises what the finished run r says of its job: recovered
// (and too_short) for a success, failed for a failure, missed for a slot
// given up (but while paused, which is no surprise, or skipped by a calendar
// or freeze, which is the point). putRun calls it for
// every run that finishes, once the job's status counts it.
func (s *state) alertOnFinish(r *pb.Run) {
	s.alerts.ix.forgetDeadline(r.GetId())
	if !s.alerts.active() {
		return
	}
	it, ok := s.item(r.GetJob())
	if !ok || r.GetGeneration() < it.status.GetFirstGeneration() {
		return // a deleted job's run: nobody expects anything of it any more
	}
	e := entry{proposedAt: s.applying}
	switch r.GetState() {
	case pb.RunState_RUN_STATE_SUCCEEDED:
		ran, short := tooShort(it.job.GetSpec(), r)
		s.recover(it, r, short, e)
		if short {
			s.raise(it, happening{name: event.TooShort, run: r, slot: r.GetSlotUnix(), token: tokenOf(r),
				reason: fmt.Sprintf("succeeded in %s, expect.min_duration is %s", ran, it.job.GetSpec().GetExpect().GetMinDuration().AsDuration())}, e)
		}
	case pb.RunState_RUN_STATE_FAILED, pb.RunState_RUN_STATE_FENCED, pb.RunState_RUN_STATE_DEADLINE_EXCEEDED:
		reason := r.GetReason()
		if cur := CurrentAttempt(r); reason == "" && cur != nil {
			reason = cur.GetDetail()
		}
		s.raise(it, happening{name: event.Failed, run: r, slot: r.GetSlotUnix(), token: tokenOf(r),
			reason: truncateString(reason, maxReason*4), failures: it.status.GetConsecutiveFailures()}, e)
	case pb.RunState_RUN_STATE_MISSED:
		if r.GetReason() != ReasonPaused {
			s.raise(it, happening{name: event.Missed, run: r, slot: r.GetSlotUnix(), reason: r.GetReason()}, e)
		}
	case pb.RunState_RUN_STATE_SKIPPED:
		// A calendar or a freeze skips a slot on purpose; a chained job
		// whose parents did not deliver missed its run.
		if r.GetReason() == ReasonDependencyNotMet {
			s.raise(it, happening{name: event.Missed, run: r, slot: r.GetSlotUnix(), reason: r.GetReason()}, e)
		}
	}
}

// tooShort reports how long the successful run r's last attempt ran, and
// whether that is less than its job's expect.min_duration.
func tooShort(spec *pb.JobSpec, r *pb.Run) (time.Duration, bool) {
	least := spec.GetExpect().GetMinDuration()
	cur := CurrentAttempt(r)
	if least == nil || cur == nil || cur.GetFinishedAtUnixNano() == 0 {
		return 0, false
	}
	ran := time.Duration(cur.GetFinishedAtUnixNano() - cur.GetStartedAtUnixNano())
	return ran, ran < least.AsDuration()
}

// alertPaused raises paused for the job it, which a rule paused in the
// entry being applied (reason says which): the hook for
// pause_after_failures. An operator's pause raises nothing.
func (s *state) alertPaused(it jobItem, reason string, e entry) {
	if s.alerts.active() {
		s.raise(it, happening{name: event.Paused, reason: reason, failures: it.status.GetConsecutiveFailures()}, e)
	}
}

// alertJobDeleted closes a deleted job's episodes without a word: there is
// no job left to recover.
func (s *state) alertJobDeleted(name string) {
	var gone []*pb.AlertEpisode
	s.alerts.episodes.AscendGreaterOrEqual(&pb.AlertEpisode{Job: name}, func(ep *pb.AlertEpisode) bool {
		if ep.GetJob() != name {
			return false
		}
		gone = append(gone, ep)
		return true
	})
	for _, ep := range gone {
		s.deleteEpisode(ep)
	}
}
