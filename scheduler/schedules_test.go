package scheduler

import (
	"fmt"
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func cacheJob(name, sched, zone string) *pb.Job {
	return &pb.Job{Spec: &pb.JobSpec{Name: name, Schedule: sched, Timezone: zone}}
}

func TestScheduleCacheSharesOneParsePerPair(t *testing.T) {
	c := newScheduleCache()
	a, err := c.get(cacheJob("a", "0 5 * * *", "Europe/Berlin"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.get(cacheJob("b", "0 5 * * *", "Europe/Berlin"))
	if a != b {
		t.Error("two jobs with the same schedule and zone got different parsed schedules")
	}
	utc, _ := c.get(cacheJob("c", "0 5 * * *", ""))
	if utc == a {
		t.Error("a different zone shared the parsed schedule")
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got, want := a.Next(base), time.Date(2026, 1, 1, 4, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Berlin 05:00 after %v = %v, want %v", base, got, want)
	}
	if got, want := utc.Next(base), time.Date(2026, 1, 1, 5, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("UTC 05:00 after %v = %v, want %v", base, got, want)
	}
	if n := c.size(); n != 2 {
		t.Errorf("cache holds %d pairs, want 2", n)
	}
}

func TestScheduleCacheFollowsAChangedSchedule(t *testing.T) {
	c := newScheduleCache()
	before, _ := c.get(cacheJob("a", "0 5 * * *", ""))
	after, _ := c.get(cacheJob("a", "0 6 * * *", ""))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if before.Next(base).Hour() != 5 || after.Next(base).Hour() != 6 {
		t.Errorf("next fires %v and %v, want 05:00 then 06:00", before.Next(base), after.Next(base))
	}
}

func TestScheduleCacheKeepsTheParseError(t *testing.T) {
	c := newScheduleCache()
	for _, j := range []*pb.Job{cacheJob("bad", "not cron", ""), cacheJob("zone", "0 5 * * *", "Nowhere/City")} {
		for range 2 { // the second call is served from the cache
			if s, err := c.get(j); s != nil || err == nil {
				t.Errorf("%s: got (%v, %v), want nil and an error", j.GetSpec().GetName(), s, err)
			}
		}
	}
}

func TestScheduleCacheDropsPairsNoLongerUsed(t *testing.T) {
	c := newScheduleCache()
	c.limit = 100
	kept := cacheJob("kept", "0 0 * * *", "")
	first, _ := c.get(kept)
	// Far more distinct pairs than a generation holds, each used once,
	// while one pair stays in use.
	for i := range 10 * c.limit {
		c.get(cacheJob("j", fmt.Sprintf("@every %ds", i+1), ""))
		if s, _ := c.get(kept); s != first {
			t.Fatalf("after %d other pairs the pair in use was parsed again", i+1)
		}
	}
	if n := c.size(); n > 2*c.limit {
		t.Errorf("cache holds %d pairs after %d distinct ones, want at most %d", n, 10*c.limit, 2*c.limit)
	}
}

func TestScheduleCacheParsesAPairAgainAfterAGenerationUnused(t *testing.T) {
	c := newScheduleCache()
	c.limit = 10
	idle := cacheJob("idle", "0 0 * * *", "")
	first, _ := c.get(idle)
	for i := range 2 * c.limit {
		c.get(cacheJob("j", fmt.Sprintf("@every %ds", i+1), ""))
	}
	again, err := c.get(idle)
	if err != nil || again == first {
		t.Errorf("got (%p, %v), want a fresh parse of the evicted pair", again, err)
	}
}
