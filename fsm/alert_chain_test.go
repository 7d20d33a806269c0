package fsm_test

import (
	"testing"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A slot of a job with dependencies skipped because they were not met
// raises missed with the reason dependency_not_met, in the entry that
// records it; a met slot raises nothing, nor does a chained set a pause
// skips (a pause is no surprise, as for any slot).
func TestDependencyNotMetRaisesMissed(t *testing.T) {
	h := alertHarness(t)
	h.create(testSpec("export"))
	spec := alertJob("load", nil, 0, "missed")
	spec.After, spec.AfterMode = []*pb.Dependency{dep("export", onSuccess)}, modeAll
	spec.AfterMissing = pb.AfterMissing_AFTER_MISSING_REFUSE
	gen := h.create(spec)

	slot := h.nextSlot("load")
	if r := h.fireOne(slotFire("load", gen, slot)).GetRun(); r.GetState() != stSkipped || r.GetReason() != fsm.ReasonDependencyNotMet {
		t.Fatalf("slot without a parent run: %v", r)
	}
	got := h.wantEvents("load", "missed")
	if got[0].GetReason() != fsm.ReasonDependencyNotMet || got[0].GetSlotUnix() != slot {
		t.Fatalf("missed %v, want reason %s at slot %d", got[0], fsm.ReasonDependencyNotMet, slot)
	}

	h.ran("export", stSucceeded)
	h.accepted(slotFire("load", gen, h.now.Unix()+60))
	h.wantEvents("load", "missed")

	h.create(alertJob("report", nil, 0, "missed"))
	child := childSpec("mail", modeAll, dep("report", onSuccess))
	child.Notify = []*pb.Notify{{Channel: "ops", On: []string{"missed"}}}
	h.create(child)
	h.mustOK(pauseCmd("mail", true, "maintenance"))
	if _, res := h.ran("report", stSucceeded); len(res.GetChained()) != 1 || res.GetChained()[0].GetReason() != fsm.ReasonPaused {
		t.Fatalf("paused child: %v, want its set recorded skipped paused", res.GetChained())
	}
	h.wantEvents("mail")
}
