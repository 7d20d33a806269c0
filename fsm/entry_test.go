package fsm_test

import (
	"errors"
	"testing"

	"github.com/raftcron/raftcron/fsm"
)

// Entry shares the stored values, and a write replaces them rather than
// changing them: an entry read before an update still shows the old job.
func TestEntrySharesAndIsReplacedOnWrite(t *testing.T) {
	h := newHarness(t)
	spec := testSpec("a")
	h.create(spec)
	before, err := h.f.Entry("a")
	if err != nil {
		t.Fatal(err)
	}
	if before.Job.GetStatus() != nil || before.Status == nil {
		t.Fatalf("entry: Job.Status must be unset and Status set, got %v / %v", before.Job.GetStatus(), before.Status)
	}
	again, _ := h.f.Entry("a")
	if again.Job != before.Job {
		t.Fatal("Entry copied the job; it must share the stored value")
	}
	upd := cloneSpec(spec)
	upd.Schedule = "*/7 * * * * *"
	h.mustOK(upsertCmd(upd))
	if got := before.Job.GetSpec().GetSchedule(); got != spec.GetSchedule() {
		t.Fatalf("an update changed a shared entry in place: schedule %q", got)
	}
	after, _ := h.f.Entry("a")
	if after.Job.GetSpec().GetSchedule() != upd.Schedule {
		t.Fatalf("Entry after update: schedule %q", after.Job.GetSpec().GetSchedule())
	}
	if _, err := h.f.Entry("nope"); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("unknown job: %v, want ErrNotFound", err)
	}
}
