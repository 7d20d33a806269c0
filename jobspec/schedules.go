package jobspec

import (
	"sync"
	"time"

	"github.com/raftcron/raftcron/schedule"
)

// maxParsedSchedules bounds the cache of parsed schedules; it starts over
// when full, so a stream of distinct schedules costs what it did without
// it.
const maxParsedSchedules = 4096

// parsedSchedules caches what schedule.Parse returns for a (spec, zone):
// every write validates its schedule, parsing costs a few microseconds,
// jobs share few distinct schedules, and a parsed schedule is immutable.
// Only schedules that parsed are kept.
var parsedSchedules = scheduleCache{m: make(map[scheduleKey]schedule.Schedule)}

type scheduleKey struct {
	spec string
	loc  *time.Location
}

type scheduleCache struct {
	mu sync.RWMutex // guards m
	m  map[scheduleKey]schedule.Schedule
}

func (c *scheduleCache) parse(spec string, loc *time.Location) (schedule.Schedule, error) {
	key := scheduleKey{spec, loc}
	c.mu.RLock()
	s, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return s, nil
	}
	s, err := schedule.Parse(spec, loc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxParsedSchedules {
		c.m = make(map[scheduleKey]schedule.Schedule)
	}
	c.m[key] = s
	return s, nil
}
