package fsm_test

import (
	"testing"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// recreated leaves "report" deleted and created again: its first job ran a
// manual run with request id "r1" (finished) and a second one (still
// open), and the job created after the delete has run nothing. It returns
// the old job's runs.
func recreated(t *testing.T, h *harness) (finished, open *pb.Run) {
	t.Helper()
	h.create(testSpec("report"))
	finished = h.accepted(manualFire("report", "r1", false)).GetRun()
	h.finish(finished, stSucceeded, h.now)
	open = h.accepted(manualFire("report", "r2", false)).GetRun()
	h.mustOK(deleteCmd("report", 0))
	h.create(testSpec("report"))
	return finished, open
}

func TestRecreatedJobDoesNotTakeTheOldRequestIDs(t *testing.T) {
	h := newHarness(t)
	old, _ := recreated(t, h)
	j := h.job("report")
	res := h.fireOne(ofGeneration(manualFire("report", "r1", false), j.GetGeneration()))
	if res.GetRunId() == old.GetId() {
		t.Fatalf("a trigger of the new job with the old job's request id got the old job's run %s (%v)", old.GetId(), res)
	}
	if !res.GetAccepted() {
		t.Fatalf("trigger of the new job: %v, want a new run", res)
	}
}

func TestScopedCancelRefusesTheOldJobsOpenRun(t *testing.T) {
	h := newHarness(t)
	_, open := recreated(t, h)
	c := &pb.Command{
		Caller: &pb.Caller{Principal: "billing-writer", Selector: map[string]string{"team": "billing"}},
		Kind:   &pb.Command_CancelRun{CancelRun: &pb.CancelRunCommand{RunId: open.GetId()}},
	}
	h.mustFail(c, pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound)
}

func TestRunsOfARecreatedNameAreMarkedAsTheDeletedJobs(t *testing.T) {
	h := newHarness(t)
	finished, open := recreated(t, h)
	st := h.status("report")
	if j := h.job("report"); st.GetFirstGeneration() != j.GetGeneration() || j.GetGeneration() <= open.GetGeneration() {
		t.Fatalf("re-created job: generation %d, first generation %d; the old job's runs are of generation %d",
			j.GetGeneration(), st.GetFirstGeneration(), open.GetGeneration())
	}
	mine := h.accepted(ofGeneration(manualFire("report", "new", false), h.job("report").GetGeneration())).GetRun()
	want := map[string]bool{finished.GetId(): true, open.GetId(): true, mine.GetId(): false}
	for _, r := range h.f.ListRuns("report", 0) {
		if r.GetJobDeleted() != want[r.GetId()] {
			t.Errorf("ListRuns: run %s job_deleted %v, want %v", r.GetId(), r.GetJobDeleted(), want[r.GetId()])
		}
	}
	for id, deleted := range want {
		if r := h.run(id); r.GetJobDeleted() != deleted {
			t.Errorf("Run(%s): job_deleted %v, want %v", id, r.GetJobDeleted(), deleted)
		}
	}
	billing := map[string]string{"team": "billing"}
	if h.f.RunInScope(finished, billing) || h.f.RunInScope(open, nil) || !h.f.RunInScope(mine, billing) {
		t.Error("RunInScope: the deleted job's runs must be in no scope, the new job's in its own")
	}
	// What the reads mark is never stored: a snapshot restores the same state.
	r := fsm.New()
	if err := restore(r, persist(t, h.f)); err != nil || r.StateHash() != h.f.StateHash() {
		t.Fatalf("restored copy: %v, equal hash %v", err, r.StateHash() == h.f.StateHash())
	}
}

// Before cluster version 3 a create records no first generation: the job
// owns every run of its name, so nodes of version 2 apply alike.
func TestVersion2JobsOwnEveryRunOfTheirName(t *testing.T) {
	h := newHarnessAt(t, 2)
	old, _ := recreated(t, h)
	if st := h.status("report"); st.GetFirstGeneration() != 0 {
		t.Fatalf("first generation %d at cluster version 2, want none", st.GetFirstGeneration())
	}
	if r := h.run(old.GetId()); r.GetJobDeleted() {
		t.Fatal("a version-2 job disowned a run of its name")
	}
	j := h.job("report")
	h.refused(ofGeneration(manualFire("report", "r1", false), j.GetGeneration()), fsm.ReasonDuplicateRequest)
}
