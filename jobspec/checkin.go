package jobspec

import (
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// MaxStartWithin bounds expect.start_within: a check-in's grace, which
// the leader walks the schedule across to match a ping.
const MaxStartWithin = 366 * 24 * time.Hour

// checkCheckin refuses the policies of fired jobs on a check-in job:
// raftcron starts nothing, so it has nothing to catch up, hold back,
// deliver or try again. Its deadline applies: a run still open at it fails
// deadline_exceeded.
func checkCheckin(v *violations, spec *pb.JobSpec) {
	if spec.GetCheckin() == nil {
		return
	}
	const why = "does not apply to a check-in job: raftcron does not start it"
	if spec.GetCatchup() != nil {
		v.add("catchup", why+" (a slot without a ping is recorded missed)")
	}
	if spec.GetOverlap() != pb.Overlap_OVERLAP_UNSPECIFIED {
		v.add("overlap", why+" (its runs may overlap)")
	}
	if spec.GetDelivery() != pb.Delivery_DELIVERY_UNSPECIFIED {
		v.add("delivery", why)
	}
	if spec.GetRetry() != nil {
		v.add("retry", why+", so it cannot try it again")
	}
	if spec.GetJitter() != nil {
		v.add("jitter", why+", so there is no dispatch to delay")
	}
	if spec.GetMaxRuns() != 0 {
		v.add("max_runs", why+": it fires no slot to count")
	}
	if spec.GetPauseAfterFailures() != 0 {
		v.add("pause_after_failures", "does not apply to a check-in job yet: its pings' failures are not counted")
	}
	if spec.GetCalendars() != nil {
		v.add("calendars", "does not apply to a check-in job yet: a slot without a ping is recorded missed, "+
			"whatever a calendar says (pause the job instead)")
	}
}
