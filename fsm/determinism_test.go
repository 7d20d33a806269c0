package fsm_test

import (
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestSameLogGivesSameStateAndResults(t *testing.T) {
	const entries = 400
	gen := newCommandGen(7)
	a, b := fsm.New(), fsm.New()
	codes := map[pb.ResultCode]int{}
	maxGeneration := uint64(0)
	for i := uint64(1); i <= entries; i++ {
		l := &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: gen.next()}
		ra := applyLog(t, a, l)
		rb := applyLog(t, b, l)
		if !proto.Equal(ra, rb) {
			t.Fatalf("entry %d: results differ: %v vs %v", i, ra, rb)
		}
		if a.StateHash() != b.StateHash() {
			t.Fatalf("entry %d: state hashes differ", i)
		}
		codes[ra.GetCode()]++
		maxGeneration = max(maxGeneration, ra.GetJob().GetGeneration())
	}
	// The sequence must exercise every outcome, or equal hashes prove little.
	for _, c := range []pb.ResultCode{codeOK, codeNotFound, codeExists, codeMismatch, codeMalformed} {
		if codes[c] == 0 {
			t.Fatalf("the generated log never produced %v (codes: %v)", c, codes)
		}
	}
	if maxGeneration < 2 || a.JobCount() == 0 {
		t.Fatalf("generated log reached generation %d with %d jobs, want re-creates and live jobs", maxGeneration, a.JobCount())
	}
	if a.StateHash() == fsm.New().StateHash() {
		t.Fatal("state hash equals an empty FSM's")
	}

	// A third FSM, holding unrelated state, restored from a snapshot of the
	// first, matches it, and keeps matching as the log goes on.
	c := newHarness(t)
	c.mustOK(createCmd(testSpec("unrelated")))
	if err := restore(c.f, persist(t, a)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if c.f.StateHash() != a.StateHash() {
		t.Fatal("restored FSM's state hash differs from the snapshotted one")
	}
	for i := uint64(entries + 1); i <= entries+100; i++ {
		l := &raft.Log{Index: i, Term: 2, Type: raft.LogCommand, Data: gen.next()}
		if ra, rc := applyLog(t, a, l), applyLog(t, c.f, l); !proto.Equal(ra, rc) {
			t.Fatalf("entry %d after restore: results differ: %v vs %v", i, ra, rc)
		}
	}
	if c.f.StateHash() != a.StateHash() {
		t.Fatal("restored FSM diverged from the original on the same later entries")
	}
}
