package fsm_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The run counts come from every run committed, not from the runs the
// history limit keeps: a job keeping one finished run still counts each
// fire, failure and missed slot of the hour, on every node alike (they
// survive a snapshot).
func TestRunCountsOutliveTheHistoryLimit(t *testing.T) {
	h := newHarness(t)
	spec := testSpec("job")
	spec.HistoryLimit = 1
	gen := h.create(spec)
	start := h.now
	for i, outcome := range []pb.RunState{stSucceeded, stFailed, stSucceeded, stDeadline} {
		r := h.accepted(slotFire("job", gen, h.nextSlot("job"))).GetRun()
		h.finish(r, outcome, h.now)
		if i == 1 {
			m := h.accepted(manualFire("job", "r1", false)).GetRun()
			h.finish(m, stFenced, h.now)
		}
	}
	from := h.nextSlot("job")
	h.fireAs(leaderID, leaderTerm, nil, []*pb.Miss{{Job: "job", Generation: gen, FromSlotUnix: from, ToSlotUnix: from + 120,
		Count: 3, Reason: "catchup_window"}})
	if n := len(h.f.ListRuns("job", 0)); n > 1 {
		t.Fatalf("setup: %d runs kept, want the history limit of 1", n)
	}
	want := &pb.RunCounts{Fires: 5, Failures: 3, Missed: 3}
	if got := h.f.RunCounts(start.UnixNano()); !proto.Equal(got, want) {
		t.Fatalf("run counts %v, want %v", got, want)
	}
	restored := fsm.New()
	if err := restore(restored, persist(t, h.f)); err != nil {
		t.Fatal(err)
	}
	if got := restored.RunCounts(start.UnixNano()); !proto.Equal(got, want) || restored.StateHash() != h.f.StateHash() {
		t.Fatalf("restored: run counts %v (hash equal: %v), want %v and the same state", got, restored.StateHash() == h.f.StateHash(), want)
	}
}

// Counts are kept by the minute of the entry that committed them, for an
// hour: a window takes the minutes from its start on, and a minute an hour
// old gives its place in the ring to the newest.
func TestRunCountsKeepAnHourByTheMinute(t *testing.T) {
	h := newHarness(t)
	spec := testSpec("job")
	spec.Overlap = pb.Overlap_OVERLAP_ALLOW
	gen := h.create(spec)
	h.now = h.now.Truncate(time.Minute).Add(30 * time.Second)
	first := h.now
	h.accepted(slotFire("job", gen, h.nextSlot("job")))
	h.now = first.Add(10 * time.Minute)
	h.accepted(manualFire("job", "r1", false))
	if got := h.f.RunCounts(first.UnixNano()).GetFires(); got != 2 {
		t.Errorf("fires since the first minute: %d, want 2", got)
	}
	if got := h.f.RunCounts(first.Add(time.Minute).UnixNano()).GetFires(); got != 1 {
		t.Errorf("fires from the minute after the first: %d, want 1", got)
	}
	// An hour after the first minute, the first minute's place is taken.
	h.now = first.Add(time.Hour)
	h.accepted(manualFire("job", "r2", false))
	if got := h.f.RunCounts(0).GetFires(); got != 2 {
		t.Errorf("fires of the minutes kept: %d, want 2 (the first minute's dropped after an hour)", got)
	}
}

// Below cluster version 3 the state is what the releases up to ed252bd
// (version 2) keep: no counts, at version 1 as at 2.
func TestBelowVersion3KeepsNoRunCounts(t *testing.T) {
	for _, v := range []uint32{1, 2} {
		h := newHarnessAt(t, v)
		gen := h.create(testSpec("job"))
		h.accepted(slotFire("job", gen, h.nextSlot("job")))
		if got := h.f.RunCounts(0); !proto.Equal(got, &pb.RunCounts{}) {
			t.Fatalf("run counts at version %d: %v, want none", v, got)
		}
	}
}

// A slot a rule skipped (a calendar, a freeze, an unmet dependency) is
// neither a fire nor a slot missed: the last hour counts nothing for it.
func TestSkippedSlotsAreNotCountedAsFires(t *testing.T) {
	h := newHarness(t)
	slot := h.now.Unix() + 600
	h.mustOK(putCalendarCmd(rangeCal("holidays", slot, slot+120)))
	gen := h.create(withCalendars(testSpec("billing"), []string{"holidays"}, nil))
	start := h.now
	h.skipped(slotFire("billing", gen, slot), fsm.ReasonCalendarPrefix+"holidays")
	if got := h.f.RunCounts(start.UnixNano()); got.GetFires() != 0 || got.GetMissed() != 0 || got.GetFailures() != 0 {
		t.Fatalf("counts after a skipped slot: %v, want none", got)
	}
}
