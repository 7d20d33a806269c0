package fsm_test

import (
	"errors"
	"testing"

	"github.com/raftcron/raftcron/fsm"
)

// StoredJob shares the stored values, and a write replaces them rather than
// changing them: a stored job read before an update still shows the old one.
func TestStoredJobSharesAndIsReplacedOnWrite(t *testing.T) {
	h := newHarness(t)
	spec := testSpec("a")
	h.create(spec)
	before, err := h.f.StoredJob("a")
	if err != nil {
		t.Fatal(err)
	}
	if before.Job.GetStatus() != nil || before.Status == nil {
		t.Fatalf("stored job: Job.Status must be unset and Status set, got %v / %v", before.Job.GetStatus(), before.Status)
	}
	again, _ := h.f.StoredJob("a")
	if again.Job != before.Job {
		t.Fatal("StoredJob copied the job; it must share the stored value")
	}
	upd := cloneSpec(spec)
	upd.Schedule = "*/7 * * * * *"
	h.mustOK(upsertCmd(upd))
	if got := before.Job.GetSpec().GetSchedule(); got != spec.GetSchedule() {
		t.Fatalf("an update changed a shared stored job in place: schedule %q", got)
	}
	after, _ := h.f.StoredJob("a")
	if after.Job.GetSpec().GetSchedule() != upd.Schedule {
		t.Fatalf("StoredJob after update: schedule %q", after.Job.GetSpec().GetSchedule())
	}
	if _, err := h.f.StoredJob("nope"); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("unknown job: %v, want ErrNotFound", err)
	}
}
