package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Every slot due in one tick goes into one FireBatch, and each accepted
// fire is dispatched once with the token the FSM gave it.
func TestOneFireBatchPerTick(t *testing.T) {
	h := newHarness(t)
	const jobs = 50
	for i := range jobs {
		h.putJob(spec(fmt.Sprintf("job-%02d", i), "@every 10s"))
	}
	h.lead()
	before := len(h.prop.fireBatches())
	h.clock.Advance(10 * time.Second)
	h.settle()
	batches := h.prop.fireBatches()[before:]
	if len(batches) != 1 {
		t.Fatalf("%d fire batches for one tick, want 1", len(batches))
	}
	if n := len(batches[0].GetFires()); n != jobs {
		t.Fatalf("batch has %d fires, want %d", n, jobs)
	}
	if batches[0].GetTerm() != 2 || batches[0].GetLeaderId() != "n1" {
		t.Fatalf("batch leader/term = %s/%d, want n1/2", batches[0].GetLeaderId(), batches[0].GetTerm())
	}
	started := h.exec.startedOf("")
	if len(started) != jobs {
		t.Fatalf("%d attempts dispatched, want %d", len(started), jobs)
	}
	tokens := map[uint64]bool{}
	for _, a := range started {
		if tokens[a.Token] || a.Token == 0 {
			t.Fatalf("token %d dispatched twice or zero", a.Token)
		}
		tokens[a.Token] = true
		if !a.ScheduledAt.Equal(t0.Add(10*time.Second)) || a.Number != 1 {
			t.Fatalf("attempt %+v: want slot t0+10s, attempt 1", a)
		}
	}
	for i := range jobs {
		if got := h.runsIn(fmt.Sprintf("job-%02d", i), pb.RunState_RUN_STATE_SUCCEEDED); len(got) != 1 {
			t.Fatalf("job-%02d: %d succeeded runs, want 1", i, len(got))
		}
	}
}

func TestFireBatchesKeepAJobTogether(t *testing.T) {
	b := newPlanned()
	for i := range 5 {
		g := b.group(fmt.Sprintf("j%d", i), &pb.Job{})
		for range 800 {
			g.fires = append(g.fires, &pb.Fire{Job: g.name})
		}
	}
	batches := b.batches(2000)
	if len(batches) != 3 {
		t.Fatalf("%d batches, want 3 (800+800, 800+800, 800)", len(batches))
	}
	for _, c := range batches {
		if c.size() > 2000 {
			t.Fatalf("fire batch of %d > 2000", c.size())
		}
		if len(c.jobOf) != len(c.fires) || len(c.reqs) != len(c.fires) {
			t.Fatal("per-fire bookkeeping out of step")
		}
		seen := map[string]int{}
		for _, f := range c.fires {
			seen[f.GetJob()]++
		}
		for j, n := range seen {
			if n != 800 {
				t.Fatalf("job %s split: %d fires in one fire batch", j, n)
			}
		}
	}
	big := newPlanned()
	g := big.group("huge", &pb.Job{})
	for range 2500 {
		g.fires = append(g.fires, &pb.Fire{Job: "huge"})
	}
	if c := big.batches(2000); len(c) != 1 || len(c[0].fires) != 2500 {
		t.Fatal("a group larger than the cap must stay in one entry")
	}
}

// A large tick is split into several entries, all dispatched: a small
// first one, then entries of maxFiresPerEntry, committed in that order.
func TestLargeTickIsSplitIntoFireBatches(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Workers = 16 })
	const jobs = firstEntryFires + maxFiresPerEntry + 500
	for i := range jobs {
		h.putJob(spec(fmt.Sprintf("job-%05d", i), "@every 10s"))
	}
	h.lead()
	before := len(h.prop.fireBatches())
	h.clock.Advance(10 * time.Second)
	h.settle()
	batches := h.prop.fireBatches()[before:]
	var sizes []int
	for _, b := range batches {
		sizes = append(sizes, len(b.GetFires()))
	}
	// Proposed by the loop one after another, the entries reach the log
	// in the order planned: the small first one is never queued behind.
	if !slices.Equal(sizes, []int{firstEntryFires, maxFiresPerEntry, 500}) {
		t.Fatalf("entries of %v fires in log order, want %d, %d, 500", sizes, firstEntryFires, maxFiresPerEntry)
	}
	if n := len(h.exec.startedOf("")); n != jobs {
		t.Fatalf("%d dispatched, want %d", n, jobs)
	}
}

// The wall clock jumps back an hour after a fire: nothing fires again, and
// firing resumes once the clock passes the cursor.
func TestBackwardClockJumpNeverRefires(t *testing.T) {
	h := newHarness(t)
	h.putJob(spec("job", "@every 10s"))
	h.lead()
	h.step(20 * time.Second)
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{10, 20}) {
		t.Fatalf("slots = %v, want [10 20]", got)
	}
	h.clock.Set(t0.Add(-time.Hour))
	h.settle()
	h.step(30 * time.Second)
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{10, 20}) {
		t.Fatalf("after the backward jump slots = %v, want still [10 20]", got)
	}
	h.clock.Set(t0.Add(20 * time.Second))
	h.settle()
	h.step(10 * time.Second)
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{10, 20, 30}) {
		t.Fatalf("once the clock caught up slots = %v, want [10 20 30]", got)
	}
}

// A forward jump goes through the catch-up policy: latest fires only the
// newest slot and records the others missed.
func TestForwardClockJumpUsesCatchupPolicy(t *testing.T) {
	h := newHarness(t)
	s := spec("job", "@every 10s")
	s.Catchup.Policy = pb.CatchupPolicy_CATCHUP_POLICY_LATEST
	h.putJob(s)
	h.lead()
	h.clock.Advance(5*time.Minute + time.Second)
	h.settle()
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{300}) {
		t.Fatalf("slots = %v, want only the newest, [300]", got)
	}
	var missed uint64
	reasons := map[string]uint64{}
	for _, r := range h.runsIn("job", pb.RunState_RUN_STATE_MISSED) {
		missed += r.GetMissedCount()
		reasons[r.GetReason()] += r.GetMissedCount()
	}
	if missed != 29 || reasons["catchup_window"] != 24 || reasons["catchup_policy"] != 5 {
		t.Fatalf("missed %d %v, want 29: 24 outside the window, 5 by policy", missed, reasons)
	}
	if st := status(h, "job"); st.GetCursorUnix() != t0.Unix()+300 || st.GetMissed() != 29 {
		t.Fatalf("cursor %d missed %d, want t0+300 and 29", st.GetCursorUnix()-t0.Unix(), st.GetMissed())
	}
}

// The loop never sleeps more than maxSleep, so a jump is noticed within it
// even when the next slot is far away.
func TestLoopWakesAtLeastEverySecond(t *testing.T) {
	h := newHarness(t)
	h.putJob(spec("job", "@daily"))
	h.lead()
	before := h.s.current().idleAt.Load()
	h.clock.Advance(maxSleep)
	h.waitFor("the loop to tick after maxSleep", func() bool {
		at := h.s.current().idleAt.Load()
		return at != 0 && at != before
	})
}
