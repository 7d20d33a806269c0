package fsm_test

import (
	"strings"
	"testing"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func withMaxJobs(c *pb.Command, n uint64) *pb.Command {
	c.GetPutJob().MaxJobs = n
	return c
}

// A put carries the registry's limit on jobs: a create beyond it fails with
// LIMIT_EXCEEDED, naming the limit, and changes nothing; updates and
// deletes are not limited, and 0 means no limit.
func TestCreateBeyondMaxJobsIsRefused(t *testing.T) {
	h := newHarness(t)
	h.mustOK(withMaxJobs(createCmd(testSpec("a")), 2))
	h.mustOK(withMaxJobs(upsertCmd(testSpec("b")), 2))
	r := h.mustFail(withMaxJobs(createCmd(testSpec("c")), 2), pb.ResultCode_RESULT_CODE_LIMIT_EXCEEDED, fsm.ErrLimitExceeded)
	if !strings.Contains(r.GetMessage(), "2 jobs") || !strings.Contains(r.GetMessage(), "limit") {
		t.Errorf("message %q does not name the limit", r.GetMessage())
	}
	h.mustFail(withMaxJobs(upsertCmd(testSpec("c")), 2), pb.ResultCode_RESULT_CODE_LIMIT_EXCEEDED, fsm.ErrLimitExceeded)

	spec := testSpec("a")
	spec.Schedule = "@hourly"
	h.mustOK(withMaxJobs(updateCmd(spec, 0), 2))
	h.mustOK(withMaxJobs(upsertCmd(testSpec("b")), 1)) // an update, even above the limit
	h.mustOK(deleteCmd("b", 0))
	h.mustOK(withMaxJobs(createCmd(testSpec("c")), 2))
	h.mustOK(createCmd(testSpec("d"))) // no limit
}

func withMaxOpenRuns(c *pb.Command, n uint32) *pb.Command {
	c.GetFireBatch().MaxOpenRuns = n
	return c
}

// A FireBatch carries the limit on one job's open runs: under overlap
// allow, a slot beyond it is recorded MISSED open_runs_limit (the cursor
// moves on) and a manual fire is refused, changing nothing.
func TestOpenRunsLimitUnderOverlapAllow(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withOverlap(testSpec("many"), pb.Overlap_OVERLAP_ALLOW))
	fire := func(f *pb.Fire) *pb.FireResult {
		t.Helper()
		return h.mustOK(withMaxOpenRuns(fireBatchCmd(leaderID, leaderTerm, []*pb.Fire{f}, nil), 2)).GetFires()[0]
	}
	slot := h.nextSlot("many")
	for i := range 2 {
		if r := fire(slotFire("many", gen, slot+int64(i))); !r.GetAccepted() {
			t.Fatalf("slot %d under the limit: %v", i, r)
		}
	}
	r := fire(slotFire("many", gen, slot+2))
	if r.GetAccepted() || r.GetReason() != fsm.ReasonOpenRunsLimit || r.GetRun().GetState() != stMissed {
		t.Fatalf("slot beyond the limit: %v, want MISSED %s", r, fsm.ReasonOpenRunsLimit)
	}
	if st := h.status("many"); st.GetCursorUnix() != slot+2 || len(st.GetOpenRunIds()) != 2 {
		t.Fatalf("status %v, want the cursor at the missed slot and 2 runs open", st)
	}
	before := h.f.StateHash()
	if r := fire(ofGeneration(manualFire("many", "", false), gen)); r.GetAccepted() || r.GetReason() != fsm.ReasonOpenRunsLimit {
		t.Fatalf("manual fire beyond the limit: %v, want refused %s", r, fsm.ReasonOpenRunsLimit)
	}
	if h.f.StateHash() != before {
		t.Fatal("a refused manual fire changed the state")
	}
	h.finish(h.run(h.status("many").GetOpenRunIds()[0]), stSucceeded, h.now)
	if r := fire(slotFire("many", gen, slot+3)); !r.GetAccepted() {
		t.Fatalf("slot once a run finished: %v, want accepted", r)
	}
}
