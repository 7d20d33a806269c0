package scheduler

import (
	"github.com/raftcron/raftcron/schedule"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// scheduleGeneration is how many pairs one generation of the schedule
// cache holds. With two generations the cache never holds more than about
// 2 × 65,536 parsed schedules (some 20 MB), and a registry using fewer
// distinct pairs than one generation never parses a pair twice while it
// stays in use.
const scheduleGeneration = 1 << 16

// scheduleCache shares one parsed schedule per distinct (schedule, timezone)
// pair, so that a heap rebuild over a million jobs, and every tick, neither
// parses cron specs again nor keeps a parsed copy per job: registries hold
// far fewer distinct schedules than jobs. A parsed schedule is an immutable
// value, so any number of jobs may share it.
//
// Nothing says when a pair stops being used (many jobs may share it), so
// entries age out instead: a full current generation becomes the old one,
// dropping the previous old one, and a lookup that hits the old generation
// moves the entry back into the current one. A pair unused for a whole
// generation is parsed again when it is next needed.
//
// Not safe for concurrent use: only the leader loop uses it.
type scheduleCache struct {
	cur, old map[scheduleKey]parsedSchedule
	// limit is the size of a generation; scheduleGeneration but in tests.
	limit int
}

type scheduleKey struct {
	spec, zone string
}

type parsedSchedule struct {
	// sched is nil when the spec or zone does not parse; err says why.
	sched schedule.Schedule
	err   error
}

func newScheduleCache() *scheduleCache {
	return &scheduleCache{cur: make(map[scheduleKey]parsedSchedule), limit: scheduleGeneration}
}

// get returns the job's schedule, or nil and the parse error.
func (c *scheduleCache) get(job *pb.Job) (schedule.Schedule, error) {
	spec := job.GetSpec()
	k := scheduleKey{spec: spec.GetSchedule(), zone: spec.GetTimezone()}
	if p, ok := c.cur[k]; ok {
		return p.sched, p.err
	}
	p, ok := c.old[k]
	if !ok {
		p = parse(k)
	}
	c.rotateIfFull()
	c.cur[k] = p
	return p.sched, p.err
}

func parse(k scheduleKey) parsedSchedule {
	loc, err := schedule.LoadLocation(k.zone)
	if err != nil {
		return parsedSchedule{err: err}
	}
	var p parsedSchedule
	p.sched, p.err = schedule.Parse(k.spec, loc)
	return p
}

func (c *scheduleCache) rotateIfFull() {
	if len(c.cur) < c.limit {
		return
	}
	c.old = c.cur
	c.cur = make(map[scheduleKey]parsedSchedule)
}

// size is the number of cached pairs, both generations counted.
func (c *scheduleCache) size() int { return len(c.cur) + len(c.old) }
