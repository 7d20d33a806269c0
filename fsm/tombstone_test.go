package fsm_test

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protodelim"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// snapshotHeader is the header of a snapshot of f: what the state holds.
func snapshotHeader(t *testing.T, f *fsm.FSM) *pb.SnapshotHeader {
	t.Helper()
	var h pb.SnapshotHeader
	if err := protodelim.UnmarshalFrom(bufio.NewReader(bytes.NewReader(persist(t, f))), &h); err != nil {
		t.Fatal(err)
	}
	return &h
}

// A deleted name's tombstone is collected once no run of it is open; a
// re-created job still starts above every generation the name had.
func TestTombstoneCollectedOnceNoRunIsOpen(t *testing.T) {
	h := newHarness(t)
	h.create(testSpec("busy"))
	gen := h.retarget("busy", "http://billing.test/v2")
	run := h.accepted(slotFire("busy", gen, h.nextSlot("busy"))).GetRun()
	h.mustOK(deleteCmd("busy", 0))
	if n := snapshotHeader(t, h.f).GetTombstoneCount(); n != 1 {
		t.Fatalf("%d tombstones while a run of the deleted job is open, want 1", n)
	}
	h.finish(run, stSucceeded, h.now)
	if hd := snapshotHeader(t, h.f); hd.GetTombstoneCount() != 0 || hd.GetRetiredGeneration() != gen {
		t.Fatalf("after the last run finished: %d tombstones, retired generation %d; want none and %d",
			hd.GetTombstoneCount(), hd.GetRetiredGeneration(), gen)
	}
	if g := h.create(testSpec("busy")); g <= gen {
		t.Errorf("re-created at generation %d, want above %d", g, gen)
	}

	// Nothing open at the delete: nothing is kept.
	g := h.create(testSpec("idle"))
	h.mustOK(deleteCmd("idle", 0))
	if n := snapshotHeader(t, h.f).GetTombstoneCount(); n != 0 {
		t.Errorf("%d tombstones after deleting a job with no open run, want none", n)
	}
	if again := h.create(testSpec("idle")); again <= g {
		t.Errorf("re-created at generation %d, want above %d", again, g)
	}
}

// Churn of names leaves nothing behind but one number, which snapshots
// carry: generations keep rising across a restore.
func TestTombstonesStayBoundedUnderChurn(t *testing.T) {
	h := newHarness(t)
	for i := range 500 {
		name := fmt.Sprintf("churn-%03d", i)
		h.create(testSpec(name))
		h.mustOK(deleteCmd(name, 0))
	}
	h.create(testSpec("deep"))
	h.retarget("deep", "http://billing.test/2")
	top := h.retarget("deep", "http://billing.test/3")
	h.mustOK(deleteCmd("deep", 0))
	if hd := snapshotHeader(t, h.f); hd.GetTombstoneCount() != 0 || hd.GetRetiredGeneration() < top {
		t.Fatalf("after churn: %d tombstones, retired generation %d; want none and at least %d",
			hd.GetTombstoneCount(), hd.GetRetiredGeneration(), top)
	}
	restored := fsm.New()
	if err := restore(restored, persist(t, h.f)); err != nil {
		t.Fatal(err)
	}
	if restored.StateHash() != h.f.StateHash() {
		t.Fatal("restored state hash differs")
	}
	r := newHarness(t)
	r.f, r.index = restored, h.index
	if g := r.create(testSpec("deep")); g <= top {
		t.Errorf("re-created after restore at generation %d, want above %d", g, top)
	}
}
