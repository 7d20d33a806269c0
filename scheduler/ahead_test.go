package scheduler

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// nextDue is the loop's next wake-up for a job; read while it is idle.
func (h *harness) nextDue() time.Time {
	h.t.Helper()
	at, ok := h.s.current().heap.peek()
	if !ok {
		h.t.Fatal("no job is due")
	}
	return time.Unix(0, at)
}

// plannedAhead counts the jobs with work planned ahead; read while the
// loop is idle.
func (h *harness) plannedAhead() int {
	a := h.s.current().ahead
	if a == nil {
		return 0
	}
	n := 0
	for _, pl := range a.parts {
		n += len(pl.groups)
	}
	return n
}

// aheadOf moves the clock to just before the next due time, within the
// lead, and waits until the loop has planned what comes due then.
func (h *harness) aheadOf(jobs int) time.Time {
	h.t.Helper()
	due := h.nextDue()
	h.clock.Set(due.Add(-planAheadLead / 2))
	h.settle()
	if n := h.plannedAhead(); n != jobs {
		h.t.Fatalf("%d jobs planned ahead of %s, want %d", n, due.Format(time.TimeOnly), jobs)
	}
	return due
}

// A wave is planned before it is due and fires at its time, not before;
// a job changed in between fires as it is then, not as it was planned.
func TestWaveIsPlannedAheadAndFiresAsTheJobsAreThen(t *testing.T) {
	h := newHarness(t)
	for _, name := range []string{"same", "paused", "changed", "deleted"} {
		h.putJob(spec(name, "@every 10s"))
	}
	h.lead()
	due := h.aheadOf(4)
	if n := h.exec.count.Load(); n != 0 {
		t.Fatalf("%d attempts started before the slot", n)
	}

	h.setPaused("paused", true)
	changed := spec("changed", "@every 10s")
	changed.Http.Url = "http://127.0.0.1:1/changed-since"
	h.putJob(changed)
	h.deleteJob("deleted")
	h.clock.Set(due)
	h.settle()

	slot := due.Unix() - t0.Unix()
	if got := h.startedSlots("same"); len(got) != 1 || got[0] != slot {
		t.Fatalf("same fired slots %v, want [%d]", got, slot)
	}
	for _, name := range []string{"paused", "deleted"} {
		if got := h.startedSlots(name); len(got) != 0 {
			t.Fatalf("%s fired slots %v after it was %s", name, got, name)
		}
	}
	started := h.exec.startedOf("changed")
	if len(started) != 1 || started[0].ScheduledAt.Unix() != due.Unix() {
		t.Fatalf("changed started %d attempts, want its slot %s once", len(started), due.Format(time.TimeOnly))
	}
	if url := started[0].HTTP.GetUrl(); url != changed.Http.Url {
		t.Fatalf("changed ran its target as planned (%s), not as changed (%s)", url, changed.Http.Url)
	}
	// What was planned for the changed jobs is not proposed at all: the
	// FSM would refuse it, and a refusal rests the job.
	for _, b := range h.prop.fireBatches() {
		for _, f := range b.GetFires() {
			if f.GetJob() != "same" && f.GetJob() != "changed" || f.GetJob() == "changed" && f.GetGeneration() == 1 {
				t.Fatalf("proposed %s's fire of generation %d, planned before the job changed", f.GetJob(), f.GetGeneration())
			}
		}
	}
}

// A tick that comes a second or more after the wave it planned ahead
// plans it afresh: what was on time when planned may be late now.
func TestLateTickPlansAfresh(t *testing.T) {
	h := newHarness(t)
	s := spec("none", "@every 10s")
	s.Catchup.Policy = pb.CatchupPolicy_CATCHUP_POLICY_NONE
	h.putJob(s)
	h.lead()
	due := h.aheadOf(1)
	h.clock.Set(due.Add(OnTime + time.Second))
	h.settle()
	if got := h.startedSlots("none"); len(got) != 0 {
		t.Fatalf("slots %v fired %v late under catch-up policy none", got, OnTime+time.Second)
	}
	if got := missedReasons(h, "none"); got[reasonCatchupPolicy] != 1 {
		t.Fatalf("missed slots by reason %v, want the late slot under %s", got, reasonCatchupPolicy)
	}
}

// The process hears of a wave once it is planned ahead, with its size,
// and before any of it is due; a wave planned at its due time (nothing
// ahead) is not announced.
func TestAheadOfWaveHearsOfEachWavePlannedAhead(t *testing.T) {
	var mu sync.Mutex
	var heard []int
	h := newHarness(t, func(c *Config) {
		c.AheadOfWave = func(fires int) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, fires)
		}
	})
	for i := range 3 {
		h.putJob(spec(fmt.Sprintf("job-%d", i), "@every 10s"))
	}
	heardNow := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(heard)
	}
	h.lead()
	h.clock.Set(h.nextDue()) // straight to the first wave: planned at its time
	h.settle()
	if got := heardNow(); len(got) != 0 {
		t.Fatalf("AheadOfWave heard %v of a wave planned at its due time", got)
	}
	due := h.aheadOf(3)
	if got := heardNow(); !slices.Equal(got, []int{3}) {
		t.Fatalf("before the wave at %s AheadOfWave heard %v, want [3]", due.Format(time.TimeOnly), got)
	}
	h.clock.Set(due)
	h.settle()
	if got := h.startedSlots("job-0"); len(got) != 2 {
		t.Fatalf("job-0 fired slots %v, want the first wave's and the one planned ahead", got)
	}
	if got := heardNow(); !slices.Equal(got, []int{3}) {
		t.Fatalf("after the wave AheadOfWave heard %v, want [3] still", got)
	}
}
