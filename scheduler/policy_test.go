package scheduler

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func missedReasons(h *harness, job string) map[string]uint64 {
	out := map[string]uint64{}
	for _, r := range h.runsIn(job, pb.RunState_RUN_STATE_MISSED) {
		out[r.GetReason()] += r.GetMissedCount()
	}
	return out
}

func withOverlap(o pb.Overlap) *pb.JobSpec {
	s := spec("job", "@every 10s")
	s.Overlap = o
	s.HistoryLimit = 50
	return s
}

func TestOverlapSkip(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.exec.gate("job")
	h.lead()
	h.step(30 * time.Second)
	h.release("job")
	h.step(10 * time.Second)
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{10, 40}) {
		t.Fatalf("slots = %v, want [10 40]: 20 and 30 came due while 10 ran", got)
	}
	if m := missedReasons(h, "job"); m["overlap_skipped"] != 2 || len(m) != 1 {
		t.Fatalf("missed = %v, want 2 overlap_skipped", m)
	}
	if n := h.exec.maxConcurrent("job"); n != 1 {
		t.Fatalf("%d attempts ran at once, want 1", n)
	}
}

func TestOverlapAllow(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_ALLOW))
	h.exec.gate("job")
	h.lead()
	h.step(30 * time.Second)
	if n := h.exec.maxConcurrent("job"); n != 3 {
		t.Fatalf("%d attempts ran at once, want 3", n)
	}
	h.release("job")
	if got := h.runsIn("job", pb.RunState_RUN_STATE_SUCCEEDED); len(got) != 3 {
		t.Fatalf("%d runs succeeded, want 3", len(got))
	}
}

func TestOverlapBufferOne(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_BUFFER_ONE))
	h.exec.gate("job")
	h.lead()
	h.step(30 * time.Second)
	if st := status(h, "job"); st.GetBufferedSlotUnix() != t0.Unix()+20 {
		t.Fatalf("buffered slot = %d, want t0+20", st.GetBufferedSlotUnix()-t0.Unix())
	}
	h.release("job")
	h.step(10 * time.Second)
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{10, 20, 40}) {
		t.Fatalf("slots = %v, want [10 20 40]: 20 buffered, 30 skipped", got)
	}
	if m := missedReasons(h, "job"); m["overlap_skipped"] != 1 {
		t.Fatalf("missed = %v, want slot 30 overlap_skipped", m)
	}
	if n := h.exec.maxConcurrent("job"); n != 1 {
		t.Fatalf("%d attempts ran at once, want 1", n)
	}
}

// cancel_other: the newer slot cancels the running attempt and starts only
// once it has stopped.
func TestOverlapCancelOther(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_CANCEL_OTHER))
	h.exec.gate("job")
	h.lead()
	h.step(20 * time.Second)
	fin := h.exec.finishedOf("job")
	if len(fin) != 1 || fin[0].state != pb.RunState_RUN_STATE_CANCELLED || fin[0].cancelCaus != errCancelOther {
		t.Fatalf("finished = %+v, want slot 10 cancelled by cancel_other", fin)
	}
	started := h.exec.startedOf("job")
	if len(started) != 2 || started[1].ScheduledAt.Unix()-t0.Unix() != 20 {
		t.Fatalf("started = %v, want slots 10 then 20", h.startedSlots("job"))
	}
	if n := h.exec.maxConcurrent("job"); n != 1 {
		t.Fatalf("slot 20 started before slot 10 stopped (%d ran at once)", n)
	}
	runs := h.runs("job")
	if runs[0].GetState() != pb.RunState_RUN_STATE_CANCELLED || runs[0].GetReason() != "cancel_other" {
		t.Fatalf("run of slot 10 = %s/%s, want CANCELLED/cancel_other", runs[0].GetState(), runs[0].GetReason())
	}
	h.release("job")
}

// After an outage, a job whose runs must not overlap has every slot of the
// window caught up, one after another in token order.
func TestCatchupAllIsSerialForNonAllowJobs(t *testing.T) {
	for _, o := range []pb.Overlap{pb.Overlap_OVERLAP_SKIP, pb.Overlap_OVERLAP_BUFFER_ONE, pb.Overlap_OVERLAP_CANCEL_OTHER} {
		t.Run(o.String(), func(t *testing.T) {
			h := newHarness(t)
			h.putJob(withOverlap(o))
			h.clock.Advance(45 * time.Second) // nobody leads
			h.lead()
			if got := h.startedSlots("job"); !slices.Equal(got, []int64{10, 20, 30, 40}) {
				t.Fatalf("slots = %v, want [10 20 30 40]", got)
			}
			if n := h.exec.maxConcurrent("job"); n != 1 {
				t.Fatalf("%d attempts ran at once, want 1", n)
			}
			started := h.exec.startedOf("job")
			for i := 1; i < len(started); i++ {
				if started[i].Token <= started[i-1].Token {
					t.Fatalf("tokens out of order: %d after %d", started[i].Token, started[i-1].Token)
				}
			}
			if m := missedReasons(h, "job"); len(m) != 0 {
				t.Fatalf("missed %v, want none", m)
			}
		})
	}
}

func TestCatchupAllWindowAndAllowBatch(t *testing.T) {
	h := newHarness(t)
	s := withOverlap(pb.Overlap_OVERLAP_ALLOW)
	s.Catchup.Window = durationpb.New(30 * time.Second)
	h.putJob(s)
	h.clock.Advance(65 * time.Second)
	h.lead()
	if got := h.startedSlots("job"); !slices.Equal(slices.Sorted(slices.Values(got)), []int64{40, 50, 60}) {
		t.Fatalf("slots = %v, want the window's [40 50 60]", got)
	}
	if m := missedReasons(h, "job"); m["catchup_window"] != 3 {
		t.Fatalf("missed %v, want 3 catchup_window (10, 20, 30)", m)
	}
	batches := h.prop.fireBatches()
	if len(batches) == 0 || len(batches[0].GetFires()) != 3 {
		t.Fatal("the caught-up slots of an allow job go out in one batch")
	}
}

func TestCatchupNone(t *testing.T) {
	h := newHarness(t)
	s := withOverlap(pb.Overlap_OVERLAP_SKIP)
	s.Catchup.Policy = pb.CatchupPolicy_CATCHUP_POLICY_NONE
	h.putJob(s)
	h.clock.Advance(45 * time.Second)
	h.lead()
	if got := h.startedSlots("job"); len(got) != 0 {
		t.Fatalf("slots = %v, want none caught up", got)
	}
	if m := missedReasons(h, "job"); m["catchup_policy"] != 4 {
		t.Fatalf("missed %v, want 4 catchup_policy", m)
	}
	h.step(5 * time.Second)
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{50}) {
		t.Fatalf("slots = %v, want the on-time [50]", got)
	}
}

// Pause records slots missed (paused) and resuming does not catch them up.
func TestPauseAndResume(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.lead()
	h.step(10 * time.Second)
	h.setPaused("job", true)
	h.step(30 * time.Second)
	h.setPaused("job", false)
	h.step(10 * time.Second)
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{10, 50}) {
		t.Fatalf("slots = %v, want [10 50]", got)
	}
	if m := missedReasons(h, "job"); m["paused"] != 3 {
		t.Fatalf("missed %v, want 3 paused (20, 30, 40)", m)
	}
}

// Failed attempts are retried with exponential backoff, each attempt under
// a new token, until max_attempts.
func TestRetriesWithBackoff(t *testing.T) {
	h := newHarness(t)
	s := spec("job", "@every 1h")
	s.Retry = &pb.Retry{MaxAttempts: 4, InitialBackoff: durationpb.New(time.Second), MaxBackoff: durationpb.New(3 * time.Second)}
	h.putJob(s)
	h.exec.setOutcome("job", pb.RunState_RUN_STATE_FAILED)
	h.clock.Set(t0.Add(time.Hour - time.Second))
	h.lead()
	h.step(10 * time.Second)
	runs := h.runs("job")
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	r := runs[0]
	if r.GetState() != pb.RunState_RUN_STATE_FAILED || len(r.GetAttempts()) != 4 {
		t.Fatalf("run %s with %d attempts, want FAILED after 4", r.GetState(), len(r.GetAttempts()))
	}
	// Backoff 1s, 2s, then capped at 3s.
	wantAt := []time.Duration{0, time.Second, 3 * time.Second, 6 * time.Second}
	for i, a := range r.GetAttempts() {
		at := time.Unix(0, a.GetDispatchedAtUnixNano()).Sub(t0.Add(time.Hour))
		if at != wantAt[i] {
			t.Errorf("attempt %d dispatched at +%v, want +%v", i+1, at, wantAt[i])
		}
		if i > 0 && a.GetToken() <= r.GetAttempts()[i-1].GetToken() {
			t.Errorf("attempt %d token %d not above the previous one", i+1, a.GetToken())
		}
		wantKind := pb.FireKind_FIRE_KIND_RETRY
		if i == 0 {
			wantKind = pb.FireKind_FIRE_KIND_SCHEDULED
		}
		if a.GetKind() != wantKind || a.GetState() != pb.RunState_RUN_STATE_FAILED {
			t.Errorf("attempt %d = %s/%s, want %s/FAILED", i+1, a.GetKind(), a.GetState(), wantKind)
		}
	}
	if n := len(h.exec.startedOf("job")); n != 4 {
		t.Fatalf("%d executions, want 4", n)
	}
}

// An attempt the node's policy refused fails the run with the refusal's
// reason at once: retrying would be refused again.
func TestPolicyRefusalIsNotRetried(t *testing.T) {
	h := newHarness(t)
	s := spec("job", "@every 1h")
	s.Retry = &pb.Retry{MaxAttempts: 4, InitialBackoff: durationpb.New(time.Second)}
	h.putJob(s)
	h.exec.setRefused("job", dispatch.ReasonEgressDenied)
	h.clock.Set(t0.Add(time.Hour - time.Second))
	h.lead()
	h.step(10 * time.Second)
	runs := h.runs("job")
	if len(runs) != 1 || runs[0].GetState() != pb.RunState_RUN_STATE_FAILED ||
		runs[0].GetReason() != dispatch.ReasonEgressDenied || len(runs[0].GetAttempts()) != 1 {
		t.Fatalf("runs %v, want one FAILED egress_denied run of one attempt", runs)
	}
	if n := len(h.exec.startedOf("job")); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
}

// start_at and end_at bound the slots.
func TestStartAndEnd(t *testing.T) {
	h := newHarness(t)
	s := withOverlap(pb.Overlap_OVERLAP_SKIP)
	s.StartAt = timestampAt(25 * time.Second)
	s.EndAt = timestampAt(45 * time.Second)
	h.putJob(s)
	h.lead()
	h.step(70 * time.Second)
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{30, 40}) {
		t.Fatalf("slots = %v, want [30 40]", got)
	}
	if m := missedReasons(h, "job"); len(m) != 0 {
		t.Fatalf("missed %v, want none: slots outside the bounds are not the job's", m)
	}
}

// TestSlotDueDuringCatchupJoinsTheQueue: a slot that comes due while the
// catch-up of a non-allow job is still running is caught up after it, not
// skipped as an overlap: the open run is the scheduler's own catch-up, not
// the job running long (G4).
func TestSlotDueDuringCatchupJoinsTheQueue(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.clock.Advance(45 * time.Second) // nobody leads; slots 10..40 are due
	h.exec.gate("job")
	h.lead()
	h.waitFor("the first catch-up attempt to start", func() bool { return h.exec.blockedCount("job") == 1 })
	h.clock.Advance(5 * time.Second) // slot 50 comes due while slot 10 runs
	h.settle()
	h.release("job")
	h.step(3 * time.Second)
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{10, 20, 30, 40, 50}) {
		t.Fatalf("slots = %v, want [10 20 30 40 50]", got)
	}
	if m := missedReasons(h, "job"); len(m) != 0 {
		t.Fatalf("missed %v, want none", m)
	}
}

// cancel_other: a newer slot committed in the same entry as a retry of the
// job's open run cancels that retry, which then never runs on beside it.
func TestCancelOtherCancelsARetryOfTheSameEntry(t *testing.T) {
	h := newHarness(t)
	s := withOverlap(pb.Overlap_OVERLAP_CANCEL_OTHER)
	s.Retry = &pb.Retry{MaxAttempts: 2, InitialBackoff: durationpb.New(5 * time.Second)}
	h.putJob(s)
	h.exec.setOutcome("job", pb.RunState_RUN_STATE_FAILED)
	h.lead()
	h.step(10 * time.Second)
	if r := h.runsIn("job", pb.RunState_RUN_STATE_RETRYING); len(r) != 1 {
		t.Fatalf("want slot 10's run waiting for its retry, got runs %v", h.runs("job"))
	}
	h.exec.gate("job")
	h.clock.Advance(10 * time.Second) // the retry and slot 20, in one tick
	h.waitFor("slot 20 to start", func() bool { return slices.Contains(h.startedSlots("job"), 20) })
	for _, r := range h.exec.finishedOf("job") {
		if r.a.Number == 2 && (r.state != pb.RunState_RUN_STATE_CANCELLED || r.cancelCaus != errCancelOther) {
			t.Fatalf("slot 10's retry ended %s (%v), want cancelled by cancel_other", r.state, r.cancelCaus)
		}
	}
	h.release("job")
}
