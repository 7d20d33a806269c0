package fsm_test

import (
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A log of registry writes with dependencies (cycles tried, parents
// missing, deletes forced), fires and completions that fire chained runs,
// applied to two FSMs and to one restored from a snapshot halfway, gives
// the same results and state everywhere, and exercises what chains do.
func TestChainsSameLogGivesSameState(t *testing.T) {
	const entries = 1200
	gen := newCommandGen(11)
	gen.chains = true
	a, b := newHarness(t), newHarness(t)
	gen.view = a.f
	var c *fsm.FSM
	seen := map[string]int{}
	codes := map[pb.ResultCode]int{}
	for i := uint64(2); i <= entries; i++ {
		data := gen.next()
		l := &raft.Log{Index: i, Term: termOf(data), Type: raft.LogCommand, Data: data}
		ra, rb := applyLog(t, a.f, l), applyLog(t, b.f, l)
		if !proto.Equal(ra, rb) || a.f.StateHash() != b.f.StateHash() {
			t.Fatalf("entry %d: results or states differ: %v vs %v", i, ra, rb)
		}
		if c != nil {
			if rc := applyLog(t, c, l); !proto.Equal(ra, rc) || c.StateHash() != a.f.StateHash() {
				t.Fatalf("entry %d: the restored FSM diverged", i)
			}
		} else if i == entries/2 {
			c = fsm.New()
			if err := restore(c, persist(t, a.f)); err != nil || c.StateHash() != a.f.StateHash() {
				t.Fatalf("restore halfway: %v", err)
			}
		}
		codes[ra.GetCode()]++
		tally(seen, ra)
		for _, r := range ra.GetChained() {
			seen["chained "+r.GetState().String()]++
			seen["chained reason "+r.GetReason()]++
		}
	}
	for _, v := range []string{
		"chained RUN_STATE_DISPATCHED", "chained RUN_STATE_SKIPPED", "state SKIPPED", "kind CHAINED",
	} {
		if seen[v] == 0 {
			t.Errorf("the log never produced %q (seen: %v)", v, seen)
		}
	}
	if codes[codeDepending] == 0 || codes[codeNotFound] == 0 {
		t.Errorf("the log never refused a dependency rule and a missing parent (codes %v)", codes)
	}
	t.Logf("codes %v, verdicts %v", codes, seen)
}
