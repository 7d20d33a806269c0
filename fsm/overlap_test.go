package fsm_test

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestOverlapSkipRecordsMissed(t *testing.T) {
	for _, o := range []pb.Overlap{pb.Overlap_OVERLAP_SKIP, pb.Overlap_OVERLAP_UNSPECIFIED} {
		t.Run(o.String(), func(t *testing.T) {
			h := newHarness(t)
			gen := h.create(withOverlap(testSpec("billing"), o))
			slot := h.nextSlot("billing")
			first := h.accepted(slotFire("billing", gen, slot))
			h.missed(slotFire("billing", gen, slot+60), fsm.ReasonOverlapSkipped)
			st := h.status("billing")
			if st.GetCursorUnix() != slot+60 || !slices.Equal(st.GetOpenRunIds(), []string{first.GetRunId()}) {
				t.Fatalf("status %v, want cursor past the skipped slot and the first run still open", st)
			}
			h.finish(first.GetRun(), stSucceeded, h.now)
			h.accepted(slotFire("billing", gen, slot+120))
		})
	}
}

func TestOverlapBufferOneKeepsOneSlotAndReleasesItOnce(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withOverlap(testSpec("billing"), pb.Overlap_OVERLAP_BUFFER_ONE))
	slot := h.nextSlot("billing")
	first := h.accepted(slotFire("billing", gen, slot))

	r := h.fireOne(slotFire("billing", gen, slot+60))
	if r.GetAccepted() || r.GetReason() != fsm.ReasonBuffered || r.GetRun() != nil || r.GetToken() != 0 {
		t.Fatalf("slot during an open run: %v, want buffered without a run", r)
	}
	if st := h.status("billing"); st.GetBufferedSlotUnix() != slot+60 || st.GetCursorUnix() != slot+60 {
		t.Fatalf("status %v, want slot %d buffered and the cursor on it", st, slot+60)
	}
	h.missed(slotFire("billing", gen, slot+120), fsm.ReasonOverlapSkipped)
	if st := h.status("billing"); st.GetBufferedSlotUnix() != slot+60 || st.GetCursorUnix() != slot+120 {
		t.Fatalf("status %v, want the first buffered slot kept and the cursor at the skipped one", st)
	}

	// While the first run is open the buffered slot is not released.
	h.refused(slotFire("billing", gen, slot+60), fsm.ReasonDuplicate)
	h.finish(first.GetRun(), stSucceeded, h.now)
	// A catch-up fire is not the release.
	catchup := slotFire("billing", gen, slot+60)
	catchup.Kind = kindCatchup
	h.refused(catchup, fsm.ReasonDuplicate)

	released := h.accepted(slotFire("billing", gen, slot+60))
	if released.GetRun().GetSlotUnix() != slot+60 {
		t.Fatalf("released run %v, want slot %d", released.GetRun(), slot+60)
	}
	if st := h.status("billing"); st.GetBufferedSlotUnix() != 0 || st.GetCursorUnix() != slot+120 {
		t.Fatalf("status %v, want the buffer empty and the cursor not moved back", st)
	}
	h.finish(released.GetRun(), stSucceeded, h.now)
	h.refused(slotFire("billing", gen, slot+60), fsm.ReasonDuplicate) // released once only
}

func TestOverlapCancelOtherCancelsOpenRuns(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withOverlap(testSpec("billing"), pb.Overlap_OVERLAP_CANCEL_OTHER))
	slot := h.nextSlot("billing")
	first := h.accepted(slotFire("billing", gen, slot))
	second := h.accepted(slotFire("billing", gen, slot+60))

	old := h.run(first.GetRunId())
	if old.GetState() != stCancelled || old.GetReason() != fsm.ReasonCancelOther || fsm.CurrentAttempt(old).GetState() != stCancelled ||
		old.GetFinishedAtUnixNano() != h.now.UnixNano() {
		t.Fatalf("cancelled run %v, want CANCELLED cancel_other with its attempt CANCELLED", old)
	}
	st := h.status("billing")
	if !slices.Equal(st.GetOpenRunIds(), []string{second.GetRunId()}) || st.GetLastRunId() != first.GetRunId() ||
		st.GetLastOutcome() != stCancelled {
		t.Fatalf("status %v, want only the new run open and the cancelled one as last", st)
	}
	// The cancelled attempt's late report is superseded.
	if res := h.complete(done(first.GetRun(), stSucceeded, h.now))[0]; res.GetAccepted() || res.GetReason() != fsm.ReasonSuperseded {
		t.Fatalf("late completion of a cancelled attempt: %v, want superseded", res)
	}
}

func TestOverlapAllowAcceptsConcurrentRuns(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withOverlap(testSpec("billing"), pb.Overlap_OVERLAP_ALLOW))
	slot := h.nextSlot("billing")
	a := h.accepted(slotFire("billing", gen, slot))
	b := h.accepted(slotFire("billing", gen, slot+60))
	if st := h.status("billing"); !slices.Equal(st.GetOpenRunIds(), []string{a.GetRunId(), b.GetRunId()}) {
		t.Fatalf("open runs %v, want both, oldest first", st.GetOpenRunIds())
	}
	h.finish(a.GetRun(), stSucceeded, h.now)
	if st := h.status("billing"); !slices.Equal(st.GetOpenRunIds(), []string{b.GetRunId()}) {
		t.Fatalf("open runs %v after the first finished, want only the second", st.GetOpenRunIds())
	}
}

func TestManualTriggerHasOwnRunAndLeavesCursor(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("billing"))
	cursor := h.status("billing").GetCursorUnix()
	r := h.accepted(manualFire("billing", "req-1", false))
	run := r.GetRun()
	if run.GetKind() != kindManual || run.GetSlotUnix() != h.now.Unix() || run.GetRequestId() != "req-1" ||
		run.GetId() != "billing-1" || fsm.CurrentAttempt(run).GetKind() != kindManual {
		t.Fatalf("manual run %v, want kind MANUAL at now with the request id", run)
	}
	if st := h.status("billing"); st.GetCursorUnix() != cursor || st.GetLatestToken() != r.GetToken() {
		t.Fatalf("status %v, want the cursor unmoved at %d and latest token %d", st, cursor, r.GetToken())
	}
	// The scheduled slot of the same second still fires.
	h.finish(run, stSucceeded, h.now)
	h.accepted(slotFire("billing", 1, run.GetSlotUnix()))
}

func TestManualTriggerIsIdempotentByRequestID(t *testing.T) {
	h := newHarness(t)
	h.create(withOverlap(testSpec("billing"), pb.Overlap_OVERLAP_ALLOW))
	first := h.accepted(manualFire("billing", "req-1", false))
	again := h.refused(manualFire("billing", "req-1", false), fsm.ReasonDuplicateRequest)
	if again.GetRunId() != first.GetRunId() || !proto.Equal(again.GetRun(), first.GetRun()) {
		t.Fatalf("repeated trigger: %v, want the first run %v", again, first.GetRun())
	}
	// Still idempotent once the run finished and the job was paused.
	h.finish(first.GetRun(), stSucceeded, h.now)
	h.mustOK(pauseCmd("billing", true, ""))
	if again := h.refused(manualFire("billing", "req-1", false), fsm.ReasonDuplicateRequest); again.GetRun().GetState() != stSucceeded {
		t.Fatalf("repeated trigger after the run finished: %v, want the finished run", again)
	}
	h.mustOK(pauseCmd("billing", false, ""))
	// Another request id, or none, is another run.
	h.accepted(manualFire("billing", "req-2", false))
	h.accepted(manualFire("billing", "", false))
	h.accepted(manualFire("billing", "", false))
}

func TestManualTriggerOfPausedJobNeedsForce(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("billing"))
	h.mustOK(pauseCmd("billing", true, "incident"))
	h.refused(manualFire("billing", "req-1", false), fsm.ReasonPaused)
	if runs := h.f.ListRuns("billing", 0); len(runs) != 0 {
		t.Fatalf("a refused trigger left runs %v", ids(runs))
	}
	h.accepted(manualFire("billing", "req-1", true))
}

func TestManualTriggerFollowsOverlap(t *testing.T) {
	cases := []struct {
		overlap pb.Overlap
		reason  string // "" = accepted
	}{
		{pb.Overlap_OVERLAP_SKIP, fsm.ReasonOverlapSkipped},
		{pb.Overlap_OVERLAP_BUFFER_ONE, fsm.ReasonOverlapSkipped},
		{pb.Overlap_OVERLAP_ALLOW, ""},
		{pb.Overlap_OVERLAP_CANCEL_OTHER, ""},
	}
	for _, tc := range cases {
		t.Run(tc.overlap.String(), func(t *testing.T) {
			h := newHarness(t)
			h.create(withOverlap(testSpec("billing"), tc.overlap))
			open := h.accepted(slotFire("billing", 1, h.nextSlot("billing")))
			if tc.reason != "" {
				h.refused(manualFire("billing", "req", false), tc.reason) // refused, not recorded
				return
			}
			h.accepted(manualFire("billing", "req", false))
			cancelled := h.run(open.GetRunId()).GetState() == stCancelled
			if cancelled != (tc.overlap == pb.Overlap_OVERLAP_CANCEL_OTHER) {
				t.Fatalf("open run is %v after the trigger", h.run(open.GetRunId()).GetState())
			}
		})
	}
}
