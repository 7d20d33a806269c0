package fsm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func pauseUntilCmd(name string, until time.Time) *pb.Command {
	c := pauseCmd(name, true, "window")
	c.GetSetPaused().UntilUnix = until.Unix()
	return c
}

func endPauseCmd(name string, until time.Time) *pb.Command {
	return &pb.Command{Kind: &pb.Command_EndPause{EndPause: &pb.EndPauseCommand{Job: name, UntilUnix: until.Unix()}}}
}

// TestMaxRunsPausesAtTheNthSlot: the Nth fired slot pauses the job with
// the note "max_runs reached" in the same entry; manual runs do not count;
// a resume without raising max_runs fires nothing more (max_runs).
func TestMaxRunsPausesAtTheNthSlot(t *testing.T) {
	h := newHarness(t)
	spec := testSpec("limited")
	spec.MaxRuns = 2
	gen := h.create(spec)
	h.accepted(manualFire("limited", "", false))
	h.finishOpen("limited")
	first := h.nextSlot("limited")
	h.accepted(slotFire("limited", gen, first))
	h.finishOpen("limited")
	if j := h.job("limited"); j.GetSpec().GetPaused() || j.GetStatus().GetSlotsFired() != 1 {
		t.Fatalf("after one slot and a manual run: paused %v, slots fired %d; want running, 1", j.GetSpec().GetPaused(), j.GetStatus().GetSlotsFired())
	}
	h.accepted(slotFire("limited", gen, first+60))
	j := h.job("limited")
	if !j.GetSpec().GetPaused() || j.GetSpec().GetPauseNote() != fsm.NoteMaxRuns || j.GetStatus().GetPause().GetReason() != fsm.PauseMaxRuns {
		t.Fatalf("after the 2nd slot: spec %v, pause %v; want paused, %q, reason %s", j.GetSpec(), j.GetStatus().GetPause(), fsm.NoteMaxRuns, fsm.PauseMaxRuns)
	}
	if j.GetUpdatedBy() != fsm.PrincipalSystem {
		t.Fatalf("updated_by %q, want %q", j.GetUpdatedBy(), fsm.PrincipalSystem)
	}
	h.finishOpen("limited")
	h.missed(slotFire("limited", gen, first+120), fsm.ReasonPaused)
	h.mustOK(pauseCmd("limited", false, ""))
	h.missed(slotFire("limited", gen, h.nextSlot("limited")), fsm.ReasonMaxRuns)
	spec.MaxRuns = 3
	spec.Paused = false
	h.mustOK(upsertCmd(spec))
	h.accepted(slotFire("limited", gen, h.nextSlot("limited")))
	if !h.job("limited").GetSpec().GetPaused() {
		t.Fatal("raised to 3, the 3rd slot did not pause the job again")
	}
	h.replaysAlike()
}

// TestMaxRunsWaitsForClusterVersion3: a cluster below version 3 neither
// counts nor pauses (an older voter would not).
func TestMaxRunsWaitsForClusterVersion3(t *testing.T) {
	h := newHarnessAt(t, 2)
	spec := testSpec("limited")
	spec.MaxRuns = 1
	gen := h.create(spec)
	h.accepted(slotFire("limited", gen, h.nextSlot("limited")))
	if j := h.job("limited"); j.GetSpec().GetPaused() || j.GetStatus().GetSlotsFired() != 0 {
		t.Fatalf("at version 2: paused %v, slots fired %d; want neither", j.GetSpec().GetPaused(), j.GetStatus().GetSlotsFired())
	}
}

// TestPauseAfterFailures: N runs in a row ending failed or
// deadline_exceeded pause the job with a note naming the last; a success
// in between, or a resume, starts the count again; fenced counts for
// nothing; a run waiting for its retry has not ended.
func TestPauseAfterFailures(t *testing.T) {
	h := newHarness(t)
	spec := withRetry(testSpec("flaky"), 2, time.Second, time.Second)
	spec.PauseAfterFailures = 2
	gen := h.create(spec)
	run := func(outcomes ...pb.RunState) *pb.Run {
		t.Helper()
		r := h.accepted(slotFire("flaky", gen, h.nextSlot("flaky"))).GetRun()
		for i, o := range outcomes {
			r = h.finish(r, o, h.now)
			if i < len(outcomes)-1 {
				r = h.accepted(ofGeneration(retryFire("flaky", r.GetId()), gen)).GetRun()
			}
		}
		return r
	}
	run(stFailed, stFailed)
	if n := h.status("flaky").GetFailuresInARow(); n != 1 {
		t.Fatalf("one run failed after its retry: %d failures in a row, want 1", n)
	}
	run(stFailed, stSucceeded)
	run(stDeadline, stDeadline)
	run(stFenced)
	if h.job("flaky").GetSpec().GetPaused() || h.status("flaky").GetFailuresInARow() != 1 {
		t.Fatalf("fail, success, deadline, fenced: paused %v with %d in a row, want running with 1",
			h.job("flaky").GetSpec().GetPaused(), h.status("flaky").GetFailuresInARow())
	}
	last := run(stFailed, stFailed)
	j := h.job("flaky")
	if !j.GetSpec().GetPaused() || !strings.Contains(j.GetSpec().GetPauseNote(), last.GetId()) ||
		j.GetStatus().GetPause().GetReason() != fsm.PauseAfterFailures || j.GetStatus().GetPause().GetRunId() != last.GetId() {
		t.Fatalf("after 2 failed runs in a row: spec %v, pause %v; want paused naming %s", j.GetSpec(), j.GetStatus().GetPause(), last.GetId())
	}
	h.mustOK(pauseCmd("flaky", false, ""))
	if st := h.status("flaky"); st.GetFailuresInARow() != 0 || st.GetPause() != nil {
		t.Fatalf("resumed: %d failures in a row, pause %v; want 0 and none", st.GetFailuresInARow(), st.GetPause())
	}
	run(stFailed, stFailed)
	if h.job("flaky").GetSpec().GetPaused() {
		t.Fatal("one failure after the resume paused the job")
	}
	h.replaysAlike()
}

// TestPauseUntil: a pause with an end is ended by the leader's end_pause
// once due, only for that very pause; its slots are left to the catch-up
// policy (the cursor stays), unlike a plain resume's.
func TestPauseUntil(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("window"))
	h.mustFail(pauseUntilCmd("window", h.now), pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid)
	until := h.now.Add(time.Hour)
	h.mustOK(pauseUntilCmd("window", until))
	if p := h.status("window").GetPause(); p.GetUntilUnix() != until.Unix() {
		t.Fatalf("pause %v, want until %d", p, until.Unix())
	}
	h.missed(slotFire("window", gen, h.nextSlot("window")), fsm.ReasonPaused)
	cursor := h.status("window").GetCursorUnix()
	h.mustFail(endPauseCmd("window", until), pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid) // not due yet
	h.now = until
	if r := h.mustOK(endPauseCmd("window", until.Add(time.Second))); r.GetChanged() {
		t.Fatal("end_pause of another end changed the job")
	}
	r := h.mustOK(endPauseCmd("window", until))
	j := r.GetJob()
	if !r.GetChanged() || j.GetSpec().GetPaused() || j.GetStatus().GetPause() != nil || j.GetUpdatedBy() != fsm.PrincipalSystem {
		t.Fatalf("end_pause: %v, want resumed by %s", r, fsm.PrincipalSystem)
	}
	if got := j.GetStatus().GetCursorUnix(); got != cursor {
		t.Fatalf("cursor %d after the end of a pause with an end, want %d: its slots are the catch-up policy's", got, cursor)
	}
	if r := h.mustOK(endPauseCmd("window", until)); r.GetChanged() {
		t.Fatal("a second end_pause changed the job")
	}
	// A pause with an end an operator resumes early leaves the cursor too;
	// a plain pause's resume raises it.
	h.mustOK(pauseUntilCmd("window", h.now.Add(time.Hour)))
	h.mustOK(pauseCmd("window", false, ""))
	if got := h.status("window").GetCursorUnix(); got != cursor {
		t.Fatalf("cursor %d after an early resume, want %d", got, cursor)
	}
	h.mustOK(pauseCmd("window", true, ""))
	h.mustOK(pauseCmd("window", false, ""))
	if got := h.status("window").GetCursorUnix(); got != h.now.Unix() {
		t.Fatalf("cursor %d after a plain resume, want now %d", got, h.now.Unix())
	}
	h.replaysAlike()
}

// TestPauseUntilIsAChange: pausing a paused job with another end changes
// its status (and is audited), the same one changes nothing.
func TestPauseUntilIsAChange(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("window"))
	until := h.now.Add(time.Hour)
	h.mustOK(pauseUntilCmd("window", until))
	if r := h.mustOK(pauseUntilCmd("window", until)); r.GetChanged() {
		t.Fatal("the same pause again changed the job")
	}
	if r := h.mustOK(pauseUntilCmd("window", until.Add(time.Minute))); !r.GetChanged() ||
		r.GetJob().GetStatus().GetPause().GetUntilUnix() != until.Add(time.Minute).Unix() {
		t.Fatalf("another end: %v, want changed to the new end", r)
	}
	if r := h.mustOK(pauseCmd("window", true, "window")); !r.GetChanged() || r.GetJob().GetStatus().GetPause() != nil {
		t.Fatalf("a pause without an end over one with: %v, want the end gone", r)
	}
}

// TestTriggerPayloadAndOverlap: a trigger's payload is recorded in its
// run; its overlap overrides the job's for that run only.
func TestTriggerPayloadAndOverlap(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("billing")) // overlap skip
	f := manualFire("billing", "a", false)
	f.Payload = `{"invoice":42}`
	first := h.accepted(f).GetRun()
	if first.GetPayload() != f.Payload || first.GetConcurrent() {
		t.Fatalf("run %v, want payload %q and not concurrent", first, f.Payload)
	}
	h.refused(manualFire("billing", "b", false), fsm.ReasonOverlapSkipped)
	allow := manualFire("billing", "c", false)
	allow.Overlap = pb.Overlap_OVERLAP_ALLOW
	if r := h.accepted(allow).GetRun(); !r.GetConcurrent() {
		t.Fatalf("run %v of a trigger with overlap allow, want concurrent", r)
	}
}

// TestJitterIsRecorded: a slot's dispatch delay travels in its fire and
// stays in its run.
func TestJitterIsRecorded(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("spread"))
	f := slotFire("spread", gen, h.nextSlot("spread"))
	f.JitterMs = 1234
	if r := h.accepted(f).GetRun(); r.GetJitterMs() != 1234 || r.GetSlotUnix() != f.GetSlotUnix() {
		t.Fatalf("run %v, want jitter 1234 ms at the nominal slot", r)
	}
}

// TestSchedulesChangeTheGeneration: the schedules are what fires when.
func TestSchedulesChangeTheGeneration(t *testing.T) {
	h := newHarness(t)
	spec := testSpec("both")
	spec.Schedule, spec.Schedules = "", []string{"0 9 * * *", "0 12 * * *"}
	gen := h.create(spec)
	spec.Schedules = []string{"0 9 * * *", "0 13 * * *"}
	if got := h.mustOK(upsertCmd(spec)).GetJob().GetGeneration(); got != gen+1 {
		t.Fatalf("generation %d after a change of schedules, want %d", got, gen+1)
	}
	spec.Jitter, spec.MaxRuns, spec.PauseAfterFailures = nil, 4, 3
	if got := h.mustOK(upsertCmd(spec)).GetJob().GetGeneration(); got != gen+1 {
		t.Fatalf("generation %d after max_runs and pause_after_failures changed, want %d", got, gen+1)
	}
}

// TestPauseAfterFailuresRaisesPaused: the pause after failures raises the
// alerts' paused event once, to the job's channel; a pause after max_runs
// raises nothing.
func TestPauseAfterFailuresRaisesPaused(t *testing.T) {
	h := newHarness(t)
	h.mustOK(&pb.Command{Kind: &pb.Command_PutChannel{PutChannel: &pb.PutChannelCommand{Channel: &pb.Channel{
		Name: "ops", Webhook: &pb.WebhookChannel{Url: "http://a.test/"}}}}})
	notify := []*pb.Notify{{Channel: "ops", On: []string{"paused"}}}
	flaky := testSpec("flaky")
	flaky.PauseAfterFailures, flaky.Notify = 2, notify
	limited := testSpec("limited")
	limited.MaxRuns, limited.Notify = 1, notify
	for _, spec := range []*pb.JobSpec{flaky, limited} {
		gen := h.create(spec)
		for range 2 {
			if h.job(spec.GetName()).GetSpec().GetPaused() {
				break
			}
			r := h.accepted(slotFire(spec.GetName(), gen, h.nextSlot(spec.GetName()))).GetRun()
			h.finish(r, stFailed, h.now)
		}
		if !h.job(spec.GetName()).GetSpec().GetPaused() {
			t.Fatalf("job %s did not pause itself", spec.GetName())
		}
	}
	alerts, _ := h.f.Alerts(fsm.AlertQuery{Job: "flaky"})
	if len(alerts) != 1 || alerts[0].GetEvent() != "paused" || !strings.Contains(alerts[0].GetReason(), fsm.PauseAfterFailures) {
		t.Fatalf("alerts of flaky %v: want one paused alert naming %s", alerts, fsm.PauseAfterFailures)
	}
	if alerts, _ := h.f.Alerts(fsm.AlertQuery{Job: "limited"}); len(alerts) != 0 {
		t.Fatalf("alerts of limited %v: want none after max_runs", alerts)
	}
	h.replaysAlike()
}
