package scheduler

import (
	"fmt"
	"time"

	"github.com/raftcron/raftcron/checkin"
	"github.com/raftcron/raftcron/fsm"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// planCheckin plans a check-in job, which fires nothing: a slot without a
// ping is recorded missed (no_checkin) once its grace has passed, which
// the FSM checks against the entry's time; a paused job's slots are missed
// (paused) as they come, like any job's, and its pings are off schedule.
// A run still open at the job's deadline fails DEADLINE_EXCEEDED.
func (p *plan) planCheckin(in planInput) {
	p.expireCheckins(in)
	spec := in.job.GetSpec()
	if in.sched == nil {
		return
	}
	if spec.GetPaused() {
		p.planSlots(in)
		return
	}
	// A slot is missable once now > slot + grace: walk as of now - grace,
	// less a nanosecond, to whole seconds.
	grace := checkin.Grace(spec)
	late := in
	late.now = in.now.Add(-grace - time.Nanosecond)
	wv := newWalk(late)
	w := &wv
	w.run(func(s int64) bool { w.windowMiss.add(s); return true })
	p.addMiss(in.job, &w.windowMiss, fsm.ReasonNoCheckin)
	switch {
	case w.more:
		p.wakeAt(in.now)
	case w.future != 0:
		p.wakeAt(missableAt(time.Unix(w.future, 0), spec))
	}
}

// missableAt is when the slot at, of the check-in job spec, can be
// recorded missed: a nanosecond past its grace.
func missableAt(at time.Time, spec *pb.JobSpec) time.Time {
	return at.Add(checkin.Grace(spec) + time.Nanosecond)
}

// expireCheckins fails the check-in runs still open at the job's deadline
// (the FSM checks it against the entry's time), and wakes the job for the
// next one. A run whose outcome is on its way is in hand (in.known).
func (p *plan) expireCheckins(in planInput) {
	d := in.job.GetSpec().GetDeadline().AsDuration()
	if d <= 0 {
		return
	}
	for _, r := range in.open {
		cur := fsm.CurrentAttempt(r)
		if r.GetKind() != pb.FireKind_FIRE_KIND_CHECKIN || cur == nil || in.known != nil && in.known(cur.GetToken()) {
			continue
		}
		at := time.Unix(0, r.GetCreatedAtUnixNano()).Add(d)
		if at.After(in.now) {
			p.wakeAt(at)
			continue
		}
		p.expire = append(p.expire, &pb.Completion{
			RunId: r.GetId(), Token: cur.GetToken(), Outcome: pb.RunState_RUN_STATE_DEADLINE_EXCEEDED,
			Detail: fmt.Sprintf("no success or fail ping within the deadline (%s)", d),
		})
	}
}
