package jobspec

import (
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/schedule"
)

// ScheduleOf is a stored (normalized) spec's schedule, from the process's
// one cache of parsed schedules: its schedules as a set when it has them,
// else its schedule. Every evaluation of a job's slots (the scheduler's
// plans, previews, next fire times, backfills) goes through it, so they
// HasSchedule reports whether spec has slots of its own (schedule or
// schedules); a job without runs only after others (after).
func HasSchedule(spec *pb.JobSpec) bool {
	return spec.GetSchedule() != "" || len(spec.GetSchedules()) > 0
}

// all see the same slots.
func ScheduleOf(spec *pb.JobSpec) (schedule.Schedule, error) {
	if specs := spec.GetSchedules(); len(specs) > 0 {
		return schedule.CachedSetInZone(specs, spec.GetTimezone())
	}
	return schedule.CachedInZone(spec.GetSchedule(), spec.GetTimezone())
}
