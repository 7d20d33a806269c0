package fsm_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// alertCheckinSpec is checkinSpec notifying ops of events.
func alertCheckinSpec(name string, events ...string) *pb.JobSpec {
	spec := checkinSpec(name)
	spec.Notify = []*pb.Notify{{Channel: "ops", On: events, AfterFailures: 1}}
	return spec
}

// missAt records the check-in job's slot missed no_checkin, as the
// leader's scheduler proposes it, stamped at.
func (h *harness) missAt(job string, slot int64, at time.Time) {
	h.t.Helper()
	h.applyAt(fireBatchCmd(leaderID, leaderTerm, nil, []*pb.Miss{{
		Job: job, Generation: h.job(job).GetGeneration(), FromSlotUnix: slot, ToSlotUnix: slot, Count: 1, Reason: fsm.ReasonNoCheckin,
	}}), at)
}

// TestCheckinStoppedPagesMissedOnceAndResumedRecovers: a check-in job whose
// pings stop has every slot recorded missed but one missed alert for the
// episode; a ping one second past the grace is off schedule, and, as a
// success, it recovers the job.
func TestCheckinStoppedPagesMissedOnceAndResumedRecovers(t *testing.T) {
	h := alertHarness(t)
	slot := h.firstSlot(alertCheckinSpec("nightly", "missed", "late", "recovered"))
	h.missAt("nightly", slot, time.Unix(slot, 0).Add(ciGrace)) // the grace's last instant: no miss yet
	h.wantEvents("nightly")
	h.missAt("nightly", slot, time.Unix(slot, 0).Add(ciGrace+time.Second))
	got := h.wantEvents("nightly", "missed")
	if a := got[0]; a.GetReason() != fsm.ReasonNoCheckin || a.GetSlotUnix() != slot {
		t.Fatalf("missed %v, want reason %s at slot %d", a, fsm.ReasonNoCheckin, slot)
	}
	for i := int64(1); i <= 3; i++ {
		next := slot + 60*i
		// The leader's late timer is no news for a check-in job.
		h.at(time.Unix(next, 0).Add(ciGrace + time.Nanosecond))
		h.mustOK(checkCmd(1, &pb.AlertCheck{Job: "nightly", Event: "late", SlotUnix: next}))
		h.missAt("nightly", next, time.Unix(next, 0).Add(ciGrace+time.Second))
	}
	h.wantEvents("nightly", "missed")
	if st := h.status("nightly"); st.GetMissed() != 4 || st.GetLateSlotUnix() != 0 {
		t.Fatalf("status %v, want 4 slots missed in the ledger and none judged late", st)
	}
	last := slot + 4*60
	r := h.checkedIn(h.ping("nightly", ciSuccess, 0), time.Unix(last, 0).Add(ciGrace+time.Second))
	if !r.GetOffSchedule() {
		t.Fatalf("a ping one second past the grace took a slot: %v", r)
	}
	got = h.wantEvents("nightly", "missed", "recovered")
	if a := got[1]; a.GetEpisode() != got[0].GetEpisode() || a.GetEpisodeEvent() != "missed" || a.GetRunId() != r.GetId() {
		t.Fatalf("recovered %v, want the missed episode %s closed by %s", a, got[0].GetEpisode(), r.GetId())
	}
}

// TestCheckinTooLongFromItsStart: a check-in run is too_long at its start
// ping + expect.max_duration, once.
func TestCheckinTooLongFromItsStart(t *testing.T) {
	h := alertHarness(t)
	limit := 10 * time.Minute
	spec := alertCheckinSpec("backup", "too_long", "recovered")
	spec.Expect.MaxDuration = durationpb.New(limit)
	slot := h.firstSlot(spec)
	start := time.Unix(slot, 0).Add(3 * time.Second)
	r := h.checkedIn(h.ping("backup", ciStart, slot), start)
	if due := h.f.TooLongDue(start.Add(limit).UnixNano()-1, 10); len(due) != 0 {
		t.Fatalf("due before start + max_duration: %v", due)
	}
	due := h.f.TooLongDue(start.Add(limit).UnixNano(), 10)
	if len(due) != 1 || due[0].GetRunId() != r.GetId() {
		t.Fatalf("due at start + max_duration: %v, want %s", due, r.GetId())
	}
	h.at(start.Add(limit))
	h.mustOK(checkCmd(1, due[0]))
	h.mustOK(checkCmd(1, due[0]))
	got := h.wantEvents("backup", "too_long")
	if got[0].GetRunId() != r.GetId() || got[0].GetToken() != fsm.CurrentAttempt(r).GetToken() {
		t.Fatalf("too_long %v, want run %s", got[0], r.GetId())
	}
	end := h.ping("backup", ciSuccess, 0)
	end.RunId = r.GetId()
	h.checkedIn(end, start.Add(limit+time.Minute))
	h.wantEvents("backup", "too_long", "recovered")
}

// TestCheckinFailRaisesFailed: what `raftcron checkin NAME -- false`
// sends, a start and a fail with exit status 1, raises failed.
func TestCheckinFailRaisesFailed(t *testing.T) {
	h := alertHarness(t)
	slot := h.firstSlot(alertCheckinSpec("nightly", "failed"))
	r := h.checkedIn(h.ping("nightly", ciStart, slot), time.Unix(slot, 0))
	fail := h.ping("nightly", ciFail, 0)
	code := int32(1)
	fail.RunId, fail.ExitCode, fail.Output = r.GetId(), &code, []byte("no space left\n")
	h.checkedIn(fail, time.Unix(slot, 0).Add(time.Second))
	got := h.wantEvents("nightly", "failed")
	if a := got[0]; a.GetRunId() != r.GetId() || a.GetConsecutiveFailures() != 1 || a.GetOutcome() != stFailed ||
		a.GetReason() != "exit status 1" || a.GetOutputTail() != "no space left\n" {
		t.Fatalf("failed %v, want run %s failed with exit status 1 and its output", a, r.GetId())
	}
}
