package scheduler

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// orphanOf commits, as an earlier leader n0 in term 1, an accepted fire for
// the job's slot, and returns its run: dispatched by nobody here.
func (h *harness) orphanOf(job string, slot time.Duration) *pb.Run {
	h.t.Helper()
	j, err := h.fsm.Job(job)
	if err != nil {
		h.t.Fatal(err)
	}
	// Committed in term 1, as that leader did.
	term := h.prop.term.Swap(1)
	defer h.prop.term.Store(term)
	res := h.apply(&pb.Command{Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{
		LeaderId: "n0",
		Term:     1,
		Fires: []*pb.Fire{{Job: job, Generation: j.GetGeneration(), SlotUnix: t0.Add(slot).Unix(),
			Kind: pb.FireKind_FIRE_KIND_SCHEDULED}},
	}}})
	if !res.GetFires()[0].GetAccepted() {
		h.t.Fatalf("orphan fire refused: %s", res.GetFires()[0].GetReason())
	}
	return res.GetFires()[0].GetRun()
}

// G4: an at_least_once attempt orphaned by a leader change is dispatched
// again with a new token before any newer slot of the job fires.
func TestReconcileRedispatchesOrphanBeforeNewerSlot(t *testing.T) {
	for _, o := range []pb.Overlap{pb.Overlap_OVERLAP_SKIP, pb.Overlap_OVERLAP_ALLOW} {
		t.Run(o.String(), func(t *testing.T) {
			h := newHarness(t)
			h.putJob(withOverlap(o))
			h.clock.Advance(10 * time.Second)
			orphan := h.orphanOf("job", 10*time.Second)
			h.clock.Advance(15 * time.Second) // slot 20 falls due meanwhile
			h.exec.gate("job")
			h.lead()
			started := h.exec.startedOf("job")
			if len(started) != 1 || started[0].RunID != orphan.GetId() || started[0].Number != 2 {
				t.Fatalf("started %+v, want only the orphan %s as attempt 2", started, orphan.GetId())
			}
			if started[0].Token <= orphan.GetAttempts()[0].GetToken() {
				t.Fatalf("re-dispatch token %d not above the orphan's %d", started[0].Token, orphan.GetAttempts()[0].GetToken())
			}
			h.step(2 * time.Second)
			if n := len(h.exec.startedOf("job")); n != 1 {
				t.Fatalf("%d attempts while the re-dispatch runs, want 1: newer slots wait", n)
			}
			h.release("job")
			if got := h.startedSlots("job"); !slices.Equal(got, []int64{10, 20}) {
				t.Fatalf("slots = %v, want the orphan's 10 then 20", got)
			}
			r, err := h.fsm.Run(orphan.GetId())
			if err != nil {
				t.Fatal(err)
			}
			atts := r.GetAttempts()
			if r.GetState() != pb.RunState_RUN_STATE_SUCCEEDED || len(atts) != 2 ||
				atts[0].GetState() != pb.RunState_RUN_STATE_SUPERSEDED ||
				atts[1].GetKind() != pb.FireKind_FIRE_KIND_REDISPATCH || atts[1].GetTerm() != 2 {
				t.Fatalf("orphan run after reconcile: %v", r)
			}
		})
	}
}

// G4: an at_most_once orphan is marked unknown and never repeated.
func TestReconcileAtMostOnceMarksUnknown(t *testing.T) {
	h := newHarness(t)
	s := withOverlap(pb.Overlap_OVERLAP_SKIP)
	s.Delivery = pb.Delivery_DELIVERY_AT_MOST_ONCE
	h.putJob(s)
	h.clock.Advance(10 * time.Second)
	orphan := h.orphanOf("job", 10*time.Second)
	h.clock.Advance(5 * time.Second)
	h.lead()
	r, err := h.fsm.Run(orphan.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if r.GetState() != pb.RunState_RUN_STATE_UNKNOWN || r.GetReason() != "leader_changed" {
		t.Fatalf("orphan = %s/%s, want UNKNOWN/leader_changed", r.GetState(), r.GetReason())
	}
	h.step(5 * time.Second)
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{20}) {
		t.Fatalf("slots = %v, want only 20: the orphan is never repeated", got)
	}
	if n := metricValue(t, h.s.metrics.runs.WithLabelValues("unknown")); n != 1 {
		t.Fatalf("runs_total{unknown} = %v, want 1", n)
	}
}

// Orphans of a job deleted before the new leader came are closed.
func TestReconcileClosesOrphansOfDeletedJobs(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.clock.Advance(10 * time.Second)
	orphan := h.orphanOf("job", 10*time.Second)
	h.deleteJob("job")
	h.lead()
	r, err := h.fsm.Run(orphan.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if r.GetState() != pb.RunState_RUN_STATE_CANCELLED || r.GetReason() != "deleted" {
		t.Fatalf("orphan = %s/%s, want CANCELLED/deleted", r.GetState(), r.GetReason())
	}
	if n := len(h.exec.startedOf("")); n != 0 {
		t.Fatalf("%d attempts dispatched for a deleted job", n)
	}
}

// On losing leadership every in-flight attempt is cancelled at once and no
// outcome is committed: the runs stay open, and the next term re-dispatches
// them.
func TestLeadershipLossCancelsDispatches(t *testing.T) {
	h := newHarness(t)
	for _, name := range []string{"a", "b", "c"} {
		s := spec(name, "@every 10s")
		s.Overlap = pb.Overlap_OVERLAP_ALLOW
		h.putJob(s)
		h.exec.gate(name)
	}
	h.lead()
	h.step(10 * time.Second)
	if n := h.s.InFlight(); n != 3 {
		t.Fatalf("%d in flight, want 3", n)
	}
	h.s.SetLeader(false)
	h.waitFor("every attempt to stop", func() bool { return len(h.exec.finishedOf("")) == 3 && h.s.InFlight() == 0 })
	for _, r := range h.exec.finishedOf("") {
		if r.state != pb.RunState_RUN_STATE_CANCELLED || !errors.Is(r.cancelCaus, errLeadershipLost) {
			t.Fatalf("attempt %s ended %s (%v), want cancelled by the leadership loss", r.a.RunID, r.state, r.cancelCaus)
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		if open := h.runsIn(name, pb.RunState_RUN_STATE_DISPATCHED); len(open) != 1 {
			t.Fatalf("%s: %d open runs, want its run still DISPATCHED", name, len(open))
		}
		h.exec.open(name)
	}
	h.prop.term.Store(3)
	h.lead()
	for _, name := range []string{"a", "b", "c"} {
		runs := h.runsIn(name, pb.RunState_RUN_STATE_SUCCEEDED)
		if len(runs) != 1 || len(runs[0].GetAttempts()) != 2 || runs[0].GetAttempts()[1].GetTerm() != 3 {
			t.Fatalf("%s: runs %v, want the slot re-dispatched in term 3 and succeeded", name, runs)
		}
	}
}

// An attempt's context is not a child of its term's (see newLeader): one
// that reaches the hand-off after its term ended (its entry committed as
// leadership was lost) is cancelled as it comes in, so nothing of an ended
// term starts.
func TestAttemptOfAnEndedTermIsCancelledAsItComesIn(t *testing.T) {
	h := newHarness(t)
	owner := newLeader(h.s)
	owner.cancel(errLeadershipLost)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	h.s.handoff.dispatch(&task{a: dispatch.Attempt{Job: "late", RunID: "late-1", Token: 7}, ctx: ctx, cancel: cancel, owner: owner})
	if !errors.Is(context.Cause(ctx), errLeadershipLost) {
		t.Fatalf("attempt of an ended term came in with its context %v, want cancelled by the leadership loss", context.Cause(ctx))
	}
}

// SetLeader never blocks, and true/false/true runs a fresh term that does
// not fire anything twice.
func TestLeadershipFlapping(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.lead()
	h.step(10 * time.Second)
	for i := range 5 {
		h.s.SetLeader(false)
		h.prop.term.Add(1)
		h.s.SetLeader(true)
		if i%2 == 0 {
			h.s.SetLeader(true) // a repeated notification changes nothing
		}
	}
	h.settle()
	h.step(20 * time.Second)
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{10, 20, 30}) {
		t.Fatalf("slots = %v, want [10 20 30]", got)
	}
	if l := h.s.current(); l == nil || l.term != h.prop.Term() {
		t.Fatal("the loop does not run in the latest term")
	}
}

// A failed barrier is retried; nothing fires before it succeeds.
func TestBarrierFailureDelaysFiring(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	var fails atomic.Int32
	fails.Store(2)
	h.prop.barrier = func() error {
		if fails.Add(-1) >= 0 {
			return errInjected
		}
		return nil
	}
	h.clock.Advance(10 * time.Second)
	h.s.SetLeader(true)
	for range 2 {
		h.waitFor("the loop to wait before retrying the barrier", func() bool { return h.clock.Waiters() > 0 })
		if n := len(h.prop.fireBatches()); n != 0 {
			t.Fatalf("%d fire batches before the barrier succeeded", n)
		}
		h.clock.Advance(barrierRetry)
	}
	h.settle()
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{10}) {
		t.Fatalf("slots = %v, want [10]", got)
	}
}

// A FireBatch whose Apply failed before commit dispatches nothing and is
// planned again; the slot fires once.
func TestApplyErrorDispatchesNothing(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.lead()
	var failed atomic.Bool
	h.prop.setHook(func(cmd *pb.Command) (error, bool) {
		if cmd.GetFireBatch() != nil && !failed.Swap(true) {
			return errInjected, false
		}
		return nil, false
	})
	h.clock.Advance(10 * time.Second)
	h.waitFor("the failed proposal", func() bool { return failed.Load() && h.clock.Waiters() > 0 })
	if n := len(h.exec.startedOf("")); n != 0 {
		t.Fatalf("%d attempts dispatched after a failed proposal", n)
	}
	h.clock.Advance(fireRetry)
	h.settle()
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{10}) {
		t.Fatalf("slots = %v, want [10] once", got)
	}
}

// A FireBatch that committed although Apply reported an error is not
// dispatched on the spot; the next plan finds its own attempt unknown to
// the hand-off and dispatches it exactly once.
func TestCommittedDespiteErrorIsAdoptedOnce(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.lead()
	var failed atomic.Bool
	h.prop.setHook(func(cmd *pb.Command) (error, bool) {
		if cmd.GetFireBatch() != nil && !failed.Swap(true) {
			return errInjected, true
		}
		return nil, false
	})
	h.clock.Advance(10 * time.Second)
	h.waitFor("the failed proposal", func() bool { return failed.Load() && h.clock.Waiters() > 0 })
	if n := len(h.exec.startedOf("")); n != 0 {
		t.Fatalf("%d attempts dispatched on an Apply error", n)
	}
	h.clock.Advance(fireRetry)
	h.settle()
	h.step(5 * time.Second)
	started := h.exec.startedOf("job")
	if len(started) != 1 || started[0].ScheduledAt.Unix()-t0.Unix() != 10 {
		t.Fatalf("started %v, want slot 10 once", h.startedSlots("job"))
	}
	if runs := h.runsIn("job", pb.RunState_RUN_STATE_SUCCEEDED); len(runs) != 1 {
		t.Fatalf("%d succeeded runs, want 1", len(runs))
	}
}

func TestStopCancelsAndRefusesLeadership(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.exec.gate("job")
	h.lead()
	h.step(10 * time.Second)
	done := make(chan struct{})
	go func() { h.s.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return")
	}
	if n := h.s.InFlight(); n != 0 {
		t.Fatalf("%d in flight after Stop", n)
	}
	h.s.SetLeader(true)
	if h.s.current() != nil {
		t.Fatal("a stopped scheduler started leading")
	}
	if _, err := h.s.Trigger(context.Background(), &pb.Fire{Job: "job"}); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("Trigger after Stop: %v, want ErrNotLeader", err)
	}
}

// The observer only marks jobs dirty while a loop plans: a follower keeps
// no set growing with every applied entry.
func TestObserverRecordsNothingOnFollower(t *testing.T) {
	h := newHarness(t)
	for _, n := range []string{"a", "b"} {
		h.putJob(spec(n, "@every 10s"))
	}
	h.s.JobsChanged(fsm.Origin{Kind: "put_job"}, []string{"a", "b"})
	if h.s.hasDirty() {
		t.Fatal("a follower recorded dirty jobs")
	}
}
