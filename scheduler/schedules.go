package scheduler

import (
	"github.com/raftcron/raftcron/schedule"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// scheduleCache keeps each job's parsed schedule, so that a heap rebuild
// over a million jobs, and every tick, does not parse cron specs again. An
// entry is valid while the job's schedule and timezone strings are the same.
// Not safe for concurrent use: only the leader loop uses it.
type scheduleCache struct {
	m map[string]cachedSchedule
}

type cachedSchedule struct {
	spec, zone string
	// sched is nil when the spec or zone does not parse; err says why.
	sched schedule.Schedule
	err   error
}

func newScheduleCache() *scheduleCache {
	return &scheduleCache{m: make(map[string]cachedSchedule)}
}

// get returns the job's schedule, or nil and the parse error.
func (c *scheduleCache) get(job *pb.Job) (schedule.Schedule, error) {
	spec := job.GetSpec()
	name := spec.GetName()
	if e, ok := c.m[name]; ok && e.spec == spec.GetSchedule() && e.zone == spec.GetTimezone() {
		return e.sched, e.err
	}
	e := cachedSchedule{spec: spec.GetSchedule(), zone: spec.GetTimezone()}
	if loc, err := schedule.LoadLocation(e.zone); err != nil {
		e.err = err
	} else {
		e.sched, e.err = schedule.Parse(e.spec, loc)
	}
	c.m[name] = e
	return e.sched, e.err
}

func (c *scheduleCache) drop(name string) { delete(c.m, name) }
