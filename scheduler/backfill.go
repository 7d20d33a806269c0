package scheduler

import (
	"time"

	"github.com/raftcron/raftcron/fsm"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// planBackfill proposes the next slots of the job's running backfill, as
// many as may be open at once less those open, in order, each naming the
// slot after it on the schedule (or the backfill's end when none is left):
// the FSM accepts only the backfill's next slot and moves it on to the
// one named, so a new leader goes on where the last one stopped and no
// slot fires twice. A slot that meets another open run of the job under
// overlap buffer_one waits for it; the run's outcome plans the job again.
// A paused job's backfill waits for the resume.
func (p *plan) planBackfill(in planInput) {
	bf := in.status.GetBackfill()
	spec := in.job.GetSpec()
	if bf.GetState() != pb.BackfillState_BACKFILL_STATE_RUNNING || bf.GetGeneration() != in.job.GetGeneration() ||
		spec.GetPaused() || in.sched == nil {
		return
	}
	running, others := 0, 0
	for _, r := range in.open {
		if r.GetKind() == pb.FireKind_FIRE_KIND_BACKFILL {
			running++
		} else {
			others++
		}
	}
	if others > 0 && bf.GetOverlap() == fsm.BackfillBufferOne {
		return
	}
	to := bf.GetToUnix()
	_, end, hasEnd := slotBounds(in)
	for slot, n := bf.GetNextSlotUnix(), running; slot < to && n < int(bf.GetMaxConcurrent()); n++ {
		next := to
		if t := in.sched.Next(time.Unix(slot, 0)); !t.IsZero() && t.Unix() < to && !(hasEnd && t.Unix() > end) {
			next = t.Unix()
		}
		p.fires = append(p.fires, &pb.Fire{
			Job:          spec.GetName(),
			Generation:   in.job.GetGeneration(),
			SlotUnix:     slot,
			Kind:         pb.FireKind_FIRE_KIND_BACKFILL,
			NextSlotUnix: next,
		})
		slot = next
	}
}
