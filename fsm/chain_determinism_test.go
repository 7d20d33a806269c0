package fsm_test

import (
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Logs of registry writes with dependencies (cycles tried, parents
// missing, deletes forced), fires and completions that fire chained runs,
// each applied to two FSMs and to one restored from a snapshot halfway,
// give the same results and state everywhere; together they exercise what
// chains do. Logs of further seeds are drawn (up to maxLogs) until they
// have, so that a change to the generator's draws does not leave the test
// without a chained run to compare.
func TestChainsSameLogGivesSameState(t *testing.T) {
	const maxLogs = 8
	seen := map[string]int{}
	codes := map[pb.ResultCode]int{}
	want := []string{"chained RUN_STATE_DISPATCHED", "chained RUN_STATE_SKIPPED", "state SKIPPED", "kind CHAINED"}
	covered := func() bool {
		for _, v := range want {
			if seen[v] == 0 {
				return false
			}
		}
		return codes[codeDepending] > 0 && codes[codeNotFound] > 0
	}
	logs := 0
	for seed := uint64(11); logs < maxLogs && !covered(); seed++ {
		sameChainLog(t, seed, seen, codes)
		logs++
	}
	for _, v := range want {
		if seen[v] == 0 {
			t.Errorf("%d logs never produced %q (seen: %v)", logs, v, seen)
		}
	}
	if codes[codeDepending] == 0 || codes[codeNotFound] == 0 {
		t.Errorf("%d logs never refused a dependency rule and a missing parent (codes %v)", logs, codes)
	}
	t.Logf("%d logs: codes %v, verdicts %v", logs, codes, seen)
}

// sameChainLog applies the log of seed and counts its results in seen
// and codes.
func sameChainLog(t *testing.T, seed uint64, seen map[string]int, codes map[pb.ResultCode]int) {
	t.Helper()
	const entries = 1200
	gen := newCommandGen(seed)
	gen.chains = true
	a, b := newHarness(t), newHarness(t)
	gen.view = a.f
	var c *fsm.FSM
	for i := uint64(2); i <= entries; i++ {
		data := gen.next()
		l := &raft.Log{Index: i, Term: termOf(data), Type: raft.LogCommand, Data: data}
		ra, rb := applyLog(t, a.f, l), applyLog(t, b.f, l)
		if !proto.Equal(ra, rb) || a.f.StateHash() != b.f.StateHash() {
			t.Fatalf("seed %d, entry %d: results or states differ: %v vs %v", seed, i, ra, rb)
		}
		if c != nil {
			if rc := applyLog(t, c, l); !proto.Equal(ra, rc) || c.StateHash() != a.f.StateHash() {
				t.Fatalf("seed %d, entry %d: the restored FSM diverged", seed, i)
			}
		} else if i == entries/2 {
			c = fsm.New()
			if err := restore(c, persist(t, a.f)); err != nil || c.StateHash() != a.f.StateHash() {
				t.Fatalf("seed %d: restore halfway: %v", seed, err)
			}
		}
		codes[ra.GetCode()]++
		tally(seen, ra)
		for _, r := range ra.GetChained() {
			seen["chained "+r.GetState().String()]++
			seen["chained reason "+r.GetReason()]++
		}
	}
}
