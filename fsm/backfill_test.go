package fsm_test

import (
	"testing"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const kindBackfill = pb.FireKind_FIRE_KIND_BACKFILL

// startBackfillCmd backfills slots from, from+60, ... (count of them) of
// generation gen.
func startBackfillCmd(job string, gen uint64, from int64, count uint64, overlap string, maxConcurrent uint32) *pb.Command {
	return &pb.Command{Kind: &pb.Command_StartBackfill{StartBackfill: &pb.StartBackfillCommand{
		Job: job, Generation: gen, FromUnix: from, ToUnix: from + int64(count)*60,
		FirstSlotUnix: from, Slots: count, Overlap: overlap, MaxConcurrent: maxConcurrent,
	}}}
}

func cancelBackfillCmd(job string) *pb.Command {
	return &pb.Command{Kind: &pb.Command_CancelBackfill{CancelBackfill: &pb.CancelBackfillCommand{Job: job}}}
}

// backfillFire names slot and, as the leader does, the slot after it.
func backfillFire(job string, gen uint64, slot int64) *pb.Fire {
	return &pb.Fire{Job: job, Generation: gen, SlotUnix: slot, Kind: kindBackfill, NextSlotUnix: slot + 60}
}

func (h *harness) backfillOf(name string) *pb.Backfill {
	h.t.Helper()
	return h.job(name).GetStatus().GetBackfill()
}

// TestBackfillFiresEachSlotOnceInOrder: a backfill fires its next slot
// only, each under a new token above every earlier one, with the slot as
// scheduled_at; one at a time by default; then it is done.
func TestBackfillFiresEachSlotOnceInOrder(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("past"))
	h.accepted(manualFire("past", "", false))
	h.finishOpen("past")
	before := h.f.FencingToken()
	from := h.status("past").GetCursorUnix() - 3600
	r := h.mustOK(startBackfillCmd("past", gen, from, 3, fsm.BackfillBufferOne, 1))
	if bf := r.GetBackfill(); bf.GetState() != pb.BackfillState_BACKFILL_STATE_RUNNING || bf.GetNextSlotUnix() != from || bf.GetSlots() != 3 {
		t.Fatalf("started: %v", bf)
	}
	h.refused(backfillFire("past", gen, from+60), fsm.ReasonNotNext)
	first := h.accepted(backfillFire("past", gen, from)).GetRun()
	if first.GetKind() != kindBackfill || first.GetSlotUnix() != from || fsm.CurrentAttempt(first).GetToken() <= before {
		t.Fatalf("backfill run %v, want kind BACKFILL at slot %d with a token above %d", first, from, before)
	}
	h.refused(backfillFire("past", gen, from), fsm.ReasonNotNext) // never twice
	h.refused(backfillFire("past", gen, from+60), fsm.ReasonBackfillBusy)
	if n := h.backfillOf("past").GetInFlight(); n != 1 {
		t.Fatalf("in flight %d, want 1", n)
	}
	h.finish(first, stSucceeded, h.now)
	second := h.accepted(backfillFire("past", gen, from+60)).GetRun()
	h.finish(second, stFailed, h.now)
	third := h.accepted(backfillFire("past", gen, from+120)).GetRun()
	if bf := h.backfillOf("past"); bf.GetState() != pb.BackfillState_BACKFILL_STATE_RUNNING || bf.GetNextSlotUnix() != bf.GetToUnix() {
		t.Fatalf("last slot fired, its run open: %v, want running at its end", bf)
	}
	h.finish(third, stSucceeded, h.now)
	bf := h.backfillOf("past")
	if bf.GetState() != pb.BackfillState_BACKFILL_STATE_DONE || bf.GetFired() != 3 || bf.GetFinishedAtUnixNano() == 0 {
		t.Fatalf("every slot fired and finished: %v, want done with 3 fired", bf)
	}
	h.refused(backfillFire("past", gen, bf.GetToUnix()), fsm.ReasonNoBackfill)
	runs := h.f.RunsPage(fsm.RunQuery{Job: "past", Kind: kindBackfill}).Runs
	if len(runs) != 3 {
		t.Fatalf("%d runs of kind backfill listed, want 3", len(runs))
	}
	h.replaysAlike()
}

// TestBackfillLeavesSucceededSlots: a slot whose successful run is in the
// ledger is skipped, unless rerun; a failed one is fired again.
func TestBackfillLeavesSucceededSlots(t *testing.T) {
	for _, rerun := range []bool{false, true} {
		h := newHarness(t)
		gen := h.create(testSpec("past"))
		slot := h.nextSlot("past")
		h.finish(h.accepted(slotFire("past", gen, slot)).GetRun(), stSucceeded, h.now)
		h.finish(h.accepted(slotFire("past", gen, slot+60)).GetRun(), stFailed, h.now)
		cmd := startBackfillCmd("past", gen, slot, 2, fsm.BackfillBufferOne, 1)
		cmd.GetStartBackfill().Rerun = rerun
		h.mustOK(cmd)
		res := h.fireOne(backfillFire("past", gen, slot))
		if rerun {
			if !res.GetAccepted() {
				t.Fatalf("rerun: %v, want the succeeded slot fired", res)
			}
			h.finishOpen("past")
		} else if res.GetAccepted() || res.GetReason() != fsm.ReasonAlreadySucceeded || h.backfillOf("past").GetSkipped() != 1 {
			t.Fatalf("without rerun: %v (backfill %v), want skipped as already succeeded", res, h.backfillOf("past"))
		}
		h.accepted(backfillFire("past", gen, slot+60))
	}
}

// TestBackfillOverlap: a slot meeting an open run of the job waits
// (buffer_one), is recorded missed (skip), or runs beside it (allow, up to
// max_concurrent backfill runs).
func TestBackfillOverlap(t *testing.T) {
	for _, tc := range []struct {
		overlap string
		max     uint32
	}{{fsm.BackfillBufferOne, 1}, {fsm.BackfillSkip, 1}, {fsm.BackfillAllow, 2}} {
		h := newHarness(t)
		gen := h.create(testSpec("busy"))
		h.accepted(manualFire("busy", "", false)) // open
		from := h.status("busy").GetCursorUnix() - 3600
		h.mustOK(startBackfillCmd("busy", gen, from, 3, tc.overlap, tc.max))
		switch tc.overlap {
		case fsm.BackfillBufferOne:
			h.refused(backfillFire("busy", gen, from), fsm.ReasonOverlapWait)
		case fsm.BackfillSkip:
			run := h.missed(backfillFire("busy", gen, from), fsm.ReasonOverlapSkipped)
			if run.GetKind() != kindBackfill || h.backfillOf("busy").GetMissed() != 1 {
				t.Fatalf("skip: %v, backfill %v", run, h.backfillOf("busy"))
			}
		case fsm.BackfillAllow:
			a := h.accepted(backfillFire("busy", gen, from)).GetRun()
			b := h.accepted(backfillFire("busy", gen, from+60)).GetRun()
			if !a.GetConcurrent() || !b.GetConcurrent() {
				t.Fatal("backfill runs under allow not marked concurrent")
			}
			h.refused(backfillFire("busy", gen, from+120), fsm.ReasonBackfillBusy)
		}
	}
	h := newHarness(t)
	gen := h.create(testSpec("busy"))
	h.mustFail(startBackfillCmd("busy", gen, 0, 3, fsm.BackfillSkip, 2), pb.ResultCode_RESULT_CODE_INVALID, fsm.ErrInvalid)
}

// TestBackfillStartRules: one backfill at a time, on the generation it
// counted, within the proposer's limit; a cancel stops it, a new
// generation cancels it, a pause holds it.
func TestBackfillStartRules(t *testing.T) {
	h := newHarness(t)
	spec := testSpec("past")
	gen := h.create(spec)
	from := h.status("past").GetCursorUnix() - 3600
	h.mustFail(startBackfillCmd("past", gen+1, from, 3, fsm.BackfillBufferOne, 1), pb.ResultCode_RESULT_CODE_VERSION_MISMATCH, fsm.ErrVersionMismatch)
	limited := startBackfillCmd("past", gen, from, 3, fsm.BackfillBufferOne, 1)
	limited.GetStartBackfill().MaxSlots = 2
	h.mustFail(limited, pb.ResultCode_RESULT_CODE_LIMIT_EXCEEDED, fsm.ErrLimitExceeded)
	h.mustFail(cancelBackfillCmd("past"), pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound)
	h.mustOK(startBackfillCmd("past", gen, from, 3, fsm.BackfillBufferOne, 1))
	h.mustFail(startBackfillCmd("past", gen, from, 3, fsm.BackfillBufferOne, 1), pb.ResultCode_RESULT_CODE_ALREADY_EXISTS, fsm.ErrAlreadyExists)
	h.mustOK(pauseCmd("past", true, ""))
	h.refused(backfillFire("past", gen, from), fsm.ReasonPaused)
	h.mustOK(pauseCmd("past", false, ""))
	if bf := h.mustOK(cancelBackfillCmd("past")).GetBackfill(); bf.GetState() != pb.BackfillState_BACKFILL_STATE_CANCELLED ||
		bf.GetReason() != fsm.ReasonCancelRequested {
		t.Fatalf("cancelled: %v", bf)
	}
	h.refused(backfillFire("past", gen, from), fsm.ReasonNoBackfill)
	h.mustOK(startBackfillCmd("past", gen, from, 3, fsm.BackfillBufferOne, 1))
	spec.Schedule = "*/10 * * * *"
	h.mustOK(upsertCmd(spec))
	if bf := h.backfillOf("past"); bf.GetState() != pb.BackfillState_BACKFILL_STATE_CANCELLED || bf.GetReason() != fsm.ReasonGeneration {
		t.Fatalf("after a new schedule: %v, want cancelled (generation)", bf)
	}
	h.replaysAlike()
}

// TestBackfillIsScoped: a scoped caller backfills only jobs of its scope.
func TestBackfillIsScoped(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("past")) // team billing
	cmd := startBackfillCmd("past", gen, h.now.Unix()-3600, 3, fsm.BackfillBufferOne, 1)
	cmd.Caller = &pb.Caller{Principal: "ops", Selector: map[string]string{"team": "ops"}}
	h.mustFail(cmd, pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound)
	cancel := cancelBackfillCmd("past")
	cancel.Caller = cmd.Caller
	h.mustFail(cancel, pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound)
}

// TestBackfillSkipsWhatCalendarsAndFreezesStop: a slot an exclusion
// calendar or a freeze stops is recorded SKIPPED with its reason, as a run
// of kind BACKFILL under no token, and the backfill goes on past it.
func TestBackfillSkipsWhatCalendarsAndFreezesStop(t *testing.T) {
	h := newHarness(t)
	from := h.now.Unix() - 3600
	h.mustOK(putCalendarCmd(rangeCal("closed", from, from+60)))
	h.mustOK(createFreezeCmd(freezeOf("deploy", from+120, from+180, true, nil)))
	gen := h.create(withCalendars(testSpec("past"), []string{"closed"}, nil))
	h.mustOK(startBackfillCmd("past", gen, from, 4, fsm.BackfillBufferOne, 1))
	token := h.f.FencingToken()
	for i, want := range []string{"calendar:closed", "", "freeze:deploy", ""} {
		slot := from + int64(i)*60
		r := h.fireOne(backfillFire("past", gen, slot))
		if want == "" {
			if !r.GetAccepted() {
				t.Fatalf("slot %d: %v, want it fired", i, r)
			}
			h.finish(r.GetRun(), stSucceeded, h.now)
			continue
		}
		if run := r.GetRun(); r.GetAccepted() || r.GetReason() != want || run.GetState() != pb.RunState_RUN_STATE_SKIPPED ||
			run.GetKind() != kindBackfill || run.GetReason() != want || len(run.GetAttempts()) != 0 {
			t.Fatalf("slot %d: %v, want skipped %s as a backfill run", i, r, want)
		}
	}
	bf := h.backfillOf("past")
	if bf.GetState() != pb.BackfillState_BACKFILL_STATE_DONE || bf.GetFired() != 2 || bf.GetSkipped() != 2 {
		t.Fatalf("backfill %v: want done, 2 fired and 2 skipped", bf)
	}
	if h.f.FencingToken() != token+2 {
		t.Fatalf("tokens %d -> %d: want one per fired slot only", token, h.f.FencingToken())
	}
	h.replaysAlike()
}

// TestBackfillRefusesACheckinJob: a check-in job fires none of its slots,
// so no backfill starts for it.
func TestBackfillRefusesACheckinJob(t *testing.T) {
	h := newHarness(t)
	gen := h.create(checkinSpec("pinged"))
	h.mustFail(startBackfillCmd("pinged", gen, h.now.Unix()-3600, 3, fsm.BackfillBufferOne, 1), codeInvalid, fsm.ErrInvalid)
}
