package fsm_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestCreateSetsCursorToCreationTime(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("billing"))
	st := h.status("billing")
	if st.GetCursorUnix() != h.now.Unix() {
		t.Fatalf("cursor %d, want the creation time %d", st.GetCursorUnix(), h.now.Unix())
	}
	if got := h.job("billing").GetStatus(); !proto.Equal(got, st) {
		t.Fatalf("Job().Status = %v, want %v", got, st)
	}
	if _, err := h.f.JobStatus("ghost"); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("JobStatus(ghost) = %v, want ErrNotFound", err)
	}
	// A slot at the creation second has been evaluated; the next one fires.
	h.refused(slotFire("billing", 1, h.now.Unix()), fsm.ReasonDuplicate)
	h.accepted(slotFire("billing", 1, h.now.Unix()+1))
}

func TestCursorNeverMovesBack(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("billing"))
	far := h.now.Unix() + 3600
	h.accepted(slotFire("billing", 1, far)) // cursor now ahead of the clock

	// A generation bump raises the cursor to now, never lowers it.
	spec := testSpec("billing")
	spec.Schedule = "@hourly"
	h.mustOK(updateCmd(spec, 0))
	if got := h.status("billing").GetCursorUnix(); got != far {
		t.Fatalf("cursor %d after an update behind it, want it kept at %d", got, far)
	}
	h.refused(slotFire("billing", 2, far), fsm.ReasonDuplicate)

	// Same for a resume.
	h.mustOK(pauseCmd("billing", true, ""))
	h.mustOK(pauseCmd("billing", false, ""))
	if got := h.status("billing").GetCursorUnix(); got != far {
		t.Fatalf("cursor %d after a resume behind it, want %d", got, far)
	}
}

func TestUpdateAndResumeMoveCursorToNow(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("billing"))
	created := h.status("billing").GetCursorUnix()

	// Labels do not start a new generation: the cursor stays.
	spec := testSpec("billing")
	spec.Labels["tier"] = "gold"
	h.now = h.now.Add(time.Hour)
	h.mustOK(updateCmd(spec, 0))
	if got := h.status("billing").GetCursorUnix(); got != created {
		t.Fatalf("cursor %d after a label change, want %d", got, created)
	}

	// A new schedule takes effect from the update on.
	spec.Schedule = "@hourly"
	h.now = h.now.Add(time.Hour)
	h.mustOK(updateCmd(spec, 0))
	if got := h.status("billing").GetCursorUnix(); got != h.now.Unix() {
		t.Fatalf("cursor %d after a schedule change, want the update time %d", got, h.now.Unix())
	}

	// A resume does not catch up the paused time.
	h.mustOK(pauseCmd("billing", true, "maintenance"))
	h.now = h.now.Add(time.Hour)
	h.mustOK(pauseCmd("billing", false, ""))
	if got := h.status("billing").GetCursorUnix(); got != h.now.Unix() {
		t.Fatalf("cursor %d after a resume, want the resume time %d", got, h.now.Unix())
	}

	// So does a put that clears paused.
	spec.Paused = true
	h.mustOK(updateCmd(spec, 0))
	spec.Paused = false
	h.now = h.now.Add(time.Hour)
	h.mustOK(updateCmd(spec, 0))
	if got := h.status("billing").GetCursorUnix(); got != h.now.Unix() {
		t.Fatalf("cursor %d after a put that resumes, want %d", got, h.now.Unix())
	}
}

func TestAcceptedFireCommitsRunWithTokenAndAdvancesCursor(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("billing"))
	slot := h.nextSlot("billing")
	r := h.accepted(slotFire("billing", gen, slot))

	want := &pb.Run{
		Id:         "billing-1",
		Job:        "billing",
		Generation: gen,
		SlotUnix:   slot,
		Kind:       kindScheduled,
		State:      stDispatched,
		Attempts: []*pb.Attempt{{
			Number: 1, Token: 1, Kind: kindScheduled, NodeId: leaderID, Term: leaderTerm,
			DispatchedAtUnixNano: h.now.UnixNano(), State: stDispatched,
		}},
		CreatedAtUnixNano: h.now.UnixNano(),
	}
	if !proto.Equal(r.GetRun(), want) || r.GetRunId() != "billing-1" || r.GetToken() != 1 || r.GetAttempt() != 1 {
		t.Fatalf("result %v, want run %v with token 1, attempt 1", r, want)
	}
	if got := h.run("billing-1"); !proto.Equal(got, want) {
		t.Fatalf("stored run %v, want %v", got, want)
	}
	st := h.status("billing")
	if st.GetCursorUnix() != slot || st.GetLatestToken() != 1 || len(st.GetOpenRunIds()) != 1 || st.GetOpenRunIds()[0] != "billing-1" {
		t.Fatalf("status %v, want cursor %d, latest token 1, open [billing-1]", st, slot)
	}
	if h.f.FencingToken() != 1 {
		t.Fatalf("FencingToken %d, want 1", h.f.FencingToken())
	}
}

func TestDuplicateSlotIsRefused(t *testing.T) {
	h := newHarness(t)
	spec := withOverlap(testSpec("billing"), pb.Overlap_OVERLAP_ALLOW)
	gen := h.create(spec)
	slot := h.nextSlot("billing")
	h.accepted(slotFire("billing", gen, slot))

	h.refused(slotFire("billing", gen, slot), fsm.ReasonDuplicate)
	h.refused(slotFire("billing", gen, slot-1), fsm.ReasonDuplicate)
	catchup := slotFire("billing", gen, slot)
	catchup.Kind = kindCatchup
	h.refused(catchup, fsm.ReasonDuplicate)

	// The same slot twice in one batch: only the first is committed.
	next := slot + 60
	res := h.fire(slotFire("billing", gen, next), slotFire("billing", gen, next))
	if !res[0].GetAccepted() || res[1].GetAccepted() || res[1].GetReason() != fsm.ReasonDuplicate {
		t.Fatalf("same slot twice in a batch: %v, want the first accepted and the second refused as duplicate", res)
	}
	runs := h.f.ListRuns("billing", 0)
	if len(runs) != 2 {
		t.Fatalf("%d runs, want one per slot: %v", len(runs), ids(runs))
	}
}

func TestTokensStrictlyIncrease(t *testing.T) {
	h := newHarness(t)
	for _, name := range []string{"a", "b", "c"} {
		h.create(withOverlap(testSpec(name), pb.Overlap_OVERLAP_ALLOW))
	}
	var last uint64
	check := func(rs []*pb.FireResult) {
		t.Helper()
		for _, r := range rs {
			if !r.GetAccepted() {
				t.Fatalf("fire refused: %v", r)
			}
			if r.GetToken() <= last {
				t.Fatalf("token %d after %d: tokens must strictly increase", r.GetToken(), last)
			}
			last = r.GetToken()
		}
	}
	slot := h.now.Unix() + 10
	for i := range 3 {
		s := slot + int64(i)
		check(h.fire(slotFire("a", 1, s), slotFire("b", 1, s), slotFire("c", 1, s)))
	}

	// Across a snapshot and restore: the counter comes along.
	restored := newHarness(t)
	if err := restore(restored.f, persist(t, h.f)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	restored.index, restored.now = h.index, h.now
	if restored.f.FencingToken() != last {
		t.Fatalf("restored FencingToken %d, want %d", restored.f.FencingToken(), last)
	}
	check(restored.fire(slotFire("a", 1, slot+10), manualFire("b", "", false)))
	if restored.status("a").GetLatestToken() != last-1 || restored.status("b").GetLatestToken() != last {
		t.Fatalf("latest tokens %d and %d, want %d and %d", restored.status("a").GetLatestToken(),
			restored.status("b").GetLatestToken(), last-1, last)
	}
}

func TestFireForOtherGenerationIsRefused(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("billing"))
	spec := testSpec("billing")
	spec.Schedule = "@hourly"
	h.mustOK(updateCmd(spec, 0)) // generation 2
	slot := h.nextSlot("billing")
	h.refused(slotFire("billing", 1, slot), fsm.ReasonGeneration)
	h.refused(slotFire("billing", 3, slot), fsm.ReasonGeneration)
	h.accepted(slotFire("billing", 2, slot))
}

func TestFireForMissingJobIsGone(t *testing.T) {
	h := newHarness(t)
	h.refused(slotFire("ghost", 1, h.now.Unix()+60), fsm.ReasonGone)
	h.refused(manualFire("ghost", "", true), fsm.ReasonGone)
	h.create(testSpec("billing"))
	slot := h.nextSlot("billing")
	h.mustOK(deleteCmd("billing", 0))
	h.refused(slotFire("billing", 1, slot), fsm.ReasonGone)
	h.refused(manualFire("billing", "r1", true), fsm.ReasonGone)
}

func TestPausedSlotIsRecordedMissedAndAdvancesCursor(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("billing"))
	h.mustOK(pauseCmd("billing", true, "maintenance"))
	slot := h.nextSlot("billing")
	run := h.missed(slotFire("billing", gen, slot), fsm.ReasonPaused)
	if run.GetSlotUnix() != slot || run.GetMissedCount() != 1 || run.GetLastSlotUnix() != slot || len(run.GetAttempts()) != 0 {
		t.Fatalf("MISSED record %v, want slot %d, one slot, no attempt", run, slot)
	}
	st := h.status("billing")
	if st.GetCursorUnix() != slot || st.GetMissed() != 1 || len(st.GetOpenRunIds()) != 0 ||
		st.GetLastRunId() != run.GetId() || st.GetLastOutcome() != stMissed {
		t.Fatalf("status %v, want cursor at the slot, one missed, last outcome MISSED", st)
	}
	h.refused(slotFire("billing", gen, slot), fsm.ReasonDuplicate)
}

func TestSlotsOutsideStartAndEndAreMissed(t *testing.T) {
	h := newHarness(t)
	start := h.now.Add(time.Hour).Add(500 * time.Millisecond) // mid-second: that second is before it
	end := h.now.Add(2 * time.Hour)
	spec := testSpec("billing")
	spec.StartAt = timestamppb.New(start)
	spec.EndAt = timestamppb.New(end)
	gen := h.create(spec)

	h.missed(slotFire("billing", gen, start.Unix()), fsm.ReasonBeforeStart)
	if h.status("billing").GetCursorUnix() != start.Unix() {
		t.Fatal("a slot before start_at did not advance the cursor")
	}
	h.accepted(slotFire("billing", gen, start.Unix()+1))
	h.finishOpen("billing")
	h.accepted(slotFire("billing", gen, end.Unix())) // end_at itself still fires
	h.finishOpen("billing")
	h.missed(slotFire("billing", gen, end.Unix()+1), fsm.ReasonAfterEnd)
	if st := h.status("billing"); st.GetCursorUnix() != end.Unix()+1 || st.GetMissed() != 2 {
		t.Fatalf("status %v, want cursor after end_at and 2 missed", st)
	}
}

func TestMissRangeRecordsOneRunAndAdvancesCursor(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("billing"))
	cursor := h.status("billing").GetCursorUnix()
	from, to := cursor+60, cursor+600
	before := h.f.StateHash()
	// Ignored: unknown job, other generation, range not beyond the cursor.
	h.fireAs(leaderID, leaderTerm, nil, []*pb.Miss{
		{Job: "ghost", Generation: 1, FromSlotUnix: from, ToSlotUnix: to, Count: 10, Reason: "catchup_window"},
		{Job: "billing", Generation: gen + 1, FromSlotUnix: from, ToSlotUnix: to, Count: 10, Reason: "catchup_window"},
		{Job: "billing", Generation: gen, FromSlotUnix: cursor - 60, ToSlotUnix: cursor, Count: 2, Reason: "catchup_window"},
	})
	if h.f.StateHash() != before {
		t.Fatal("ignored misses changed the state")
	}

	res := h.fireAs(leaderID, leaderTerm, []*pb.Fire{slotFire("billing", gen, to)}, []*pb.Miss{
		{Job: "billing", Generation: gen, FromSlotUnix: from, ToSlotUnix: to, Count: 10, Reason: "catchup_window"},
	})
	// Misses come first, so the fire for the range's last slot is a duplicate.
	if res[0].GetAccepted() || res[0].GetReason() != fsm.ReasonDuplicate {
		t.Fatalf("fire after the miss range: %v, want duplicate", res[0])
	}
	runs := h.f.ListRuns("billing", 0)
	if len(runs) != 1 {
		t.Fatalf("runs %v, want one MISSED record for the range", ids(runs))
	}
	want := fmt.Sprintf("billing-m%d-0", h.index)
	r := runs[0]
	if r.GetId() != want || r.GetState() != stMissed || r.GetSlotUnix() != from || r.GetLastSlotUnix() != to ||
		r.GetMissedCount() != 10 || r.GetReason() != "catchup_window" {
		t.Fatalf("range record %v, want %s MISSED %d..%d count 10 catchup_window", r, want, from, to)
	}
	if st := h.status("billing"); st.GetCursorUnix() != to || st.GetMissed() != 10 {
		t.Fatalf("status %v, want cursor %d and 10 missed", st, to)
	}
}

func TestRunIDsAreDeterministicAndUnique(t *testing.T) {
	h := newHarness(t)
	// "x-m<index>" fires "x-m<index>-<token>", which is also the id pattern
	// of x's MISSED records: the second one gets a suffix.
	h.create(testSpec("x"))
	h.mustOK(pauseCmd("x", true, ""))
	index := h.index + 3 // the entry of the batch below
	h.create(withOverlap(testSpec(fmt.Sprintf("x-m%d", index)), pb.Overlap_OVERLAP_ALLOW))
	other := fmt.Sprintf("x-m%d", index)
	cursor := h.status("x").GetCursorUnix()
	// Tokens so far: none. Fire x-m… once to take token 1 in an earlier entry.
	h.accepted(manualFire(other, "", false)) // token 1: "x-m<index>-1"
	if h.index+1 != index {
		t.Fatalf("test setup: batch lands at index %d, want %d", h.index+1, index)
	}
	res := h.fire(slotFire("x", 1, cursor+60), slotFire("x", 1, cursor+120))
	// Positions 0 and 1: "x-m<index>-0" and "x-m<index>-1", the latter taken.
	if res[0].GetRunId() != fmt.Sprintf("x-m%d-0", index) || res[1].GetRunId() != fmt.Sprintf("x-m%d-1~1", index) {
		t.Fatalf("run ids %q and %q, want x-m%d-0 and a suffixed x-m%d-1~1", res[0].GetRunId(), res[1].GetRunId(), index, index)
	}
	if h.run(other+"-1").GetKind() != kindManual {
		t.Fatal("the earlier run was replaced")
	}
}

// The other way round: a fire whose id a MISSED record already holds gets
// a suffix, and the record stays, with its indexes and the fire's.
func TestFireWhoseIDIsTakenGetsASuffix(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("x"))
	h.mustOK(pauseCmd("x", true, ""))
	cursor := h.status("x").GetCursorUnix()
	// The batch below, at entry index, records "x-m<index>-0" and "-1".
	index := h.index + 1
	h.fire(slotFire("x", 1, cursor+60), slotFire("x", 1, cursor+120))
	other := fmt.Sprintf("x-m%d", index)
	h.create(withOverlap(testSpec(other), pb.Overlap_OVERLAP_ALLOW))
	r := h.accepted(manualFire(other, "", false)) // token 1: "x-m<index>-1", taken
	if r.GetToken() != 1 || r.GetRunId() != other+"-1~1" || r.GetRun().GetId() != r.GetRunId() {
		t.Fatalf("fire: token %d, run id %q (run %q), want token 1 and %s-1~1", r.GetToken(), r.GetRunId(), r.GetRun().GetId(), other)
	}
	if rec := h.run(other + "-1"); rec.GetJob() != "x" || rec.GetState() != stMissed {
		t.Fatalf("the record %v was replaced", rec)
	}
	if st := h.status(other); !slices.Equal(st.GetOpenRunIds(), []string{other + "-1~1"}) {
		t.Fatalf("open runs %v, want the suffixed id", st.GetOpenRunIds())
	}
	if got := ids(h.f.ListRuns(other, 0)); !slices.Equal(got, []string{other + "-1~1"}) {
		t.Fatalf("%s's runs %v, want the suffixed id alone", other, got)
	}
}

// TestFireBatchFromAnotherTermIsRefused: a batch must be committed in the
// term its leader proposed it in. One that arrives in another term (forwarded
// through another node, or outliving its leader's term) fires nothing, so its
// proposer can never dispatch it (G2).
func TestFireBatchFromAnotherTermIsRefused(t *testing.T) {
	h := newHarness(t)
	h.mustOK(createCmd(testSpec("billing")))
	before, token := h.f.StateHash(), h.f.FencingToken()

	data, err := proto.Marshal(fireBatchCmd(leaderID, leaderTerm,
		[]*pb.Fire{slotFire("billing", 1, baseTime.Unix()+60)},
		[]*pb.Miss{{Job: "billing", Generation: 1, FromSlotUnix: baseTime.Unix() + 10, ToSlotUnix: baseTime.Unix() + 20, Count: 2, Reason: "catchup_window"}}))
	if err != nil {
		t.Fatal(err)
	}
	r := applyLog(t, h.f, &raft.Log{Index: 99, Term: leaderTerm + 1, Type: raft.LogCommand, Data: data})
	if len(r.GetFires()) != 1 || r.GetFires()[0].GetAccepted() || r.GetFires()[0].GetReason() != fsm.ReasonStaleTerm {
		t.Fatalf("results %v, want the fire refused with %q", r.GetFires(), fsm.ReasonStaleTerm)
	}
	if h.f.StateHash() != before || h.f.FencingToken() != token {
		t.Fatal("a batch from another term changed the state")
	}
	// The same batch in its own term fires.
	h.accepted(slotFire("billing", 1, baseTime.Unix()+60))
}
