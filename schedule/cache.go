package schedule

import (
	"sync"
	"time"
)

// generationSize is how many (spec, zone) pairs one generation of the
// cache holds. With two generations the cache never holds more than about
// 2 × 65,536 parsed schedules (some 20 MB), and a process using fewer
// distinct pairs than one generation never parses a pair twice while it
// stays in use.
const generationSize = 1 << 16

// parsedSchedules is the process's one cache of parsed schedules, shared by
// validation at the API, schedule previews and the leader's scheduler: a
// job validated on the leader is already parsed when the scheduler plans it.
var parsedSchedules = newCache(generationSize)

// Cached is Parse through the process's cache: one parsed value per
// distinct (spec, zone), shared by every caller. Parsing costs microseconds
// and every write, preview and heap rebuild needs it, while a registry
// holds far fewer distinct schedules than jobs; a Schedule is immutable,
// so any number of jobs may share one. Errors are cached too: they are a
// function of the pair alone. Safe for concurrent use.
func Cached(spec string, loc *time.Location) (Schedule, error) {
	return parsedSchedules.get(spec, loc)
}

// CachedInZone is Cached for a job's schedule and timezone fields as
// stored: the zone is loaded as LoadLocation does.
func CachedInZone(spec, zone string) (Schedule, error) {
	loc, err := LoadLocation(zone)
	if err != nil {
		return nil, err
	}
	return Cached(spec, loc)
}

// cache keeps two generations. Nothing says when a pair stops being used
// (many jobs may share it), so entries age out instead: a full current
// generation becomes the old one, dropping the previous old one, and a
// lookup that hits the old generation moves the entry back into the
// current one. A pair unused for a whole generation is parsed again when
// it is next needed.
type cache struct {
	mu       sync.Mutex // guards cur and old
	cur, old map[cacheKey]parsed
	limit    int // the size of a generation
}

// cacheKey compares zones by pointer: LoadLocation returns one
// *time.Location per name.
type cacheKey struct {
	spec string
	loc  *time.Location
}

type parsed struct {
	sched Schedule
	err   error
}

func newCache(limit int) *cache {
	return &cache{cur: make(map[cacheKey]parsed), limit: limit}
}

func (c *cache) get(spec string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.UTC // what Parse does with nil
	}
	k := cacheKey{spec, loc}
	c.mu.Lock()
	p, ok := c.cur[k]
	if !ok {
		if p, ok = c.old[k]; ok {
			c.put(k, p)
		}
	}
	c.mu.Unlock()
	if ok {
		return p.sched, p.err
	}
	// Parse without the lock. Two callers may parse the same pair at once;
	// the later value replaces the earlier, and both are correct.
	p.sched, p.err = Parse(spec, loc)
	c.mu.Lock()
	c.put(k, p)
	c.mu.Unlock()
	return p.sched, p.err
}

// put stores p, starting a new generation when the current one is full.
// The caller holds mu.
func (c *cache) put(k cacheKey, p parsed) {
	if len(c.cur) >= c.limit {
		c.old = c.cur
		c.cur = make(map[cacheKey]parsed)
	}
	c.cur[k] = p
}

// size is the number of cached pairs, both generations counted.
func (c *cache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.old)
}
