package fsm_test

import (
	"testing"
	"time"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func cancelCmd(runID string) *pb.Command {
	return &pb.Command{Kind: &pb.Command_CancelRun{CancelRun: &pb.CancelRunCommand{RunId: runID}}}
}

// cancel commits a cancel of run and insists it was applied.
func (h *harness) cancel(runID string) *pb.Run {
	h.t.Helper()
	r := h.mustOK(cancelCmd(runID))
	if !r.GetChanged() || r.GetRun().GetId() != runID {
		h.t.Fatalf("cancel %s: %v, want changed with the run", runID, r)
	}
	return r.GetRun()
}

func TestCancelFinishesAnExecutingRun(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("billing"))
	fired := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	token := h.f.FencingToken()

	run := h.cancel(fired.GetRunId())
	a := fsm.CurrentAttempt(run)
	switch {
	case run.GetState() != stCancelled || run.GetReason() != fsm.ReasonCancelRequested:
		t.Fatalf("run %v, want CANCELLED (%s)", run, fsm.ReasonCancelRequested)
	case run.GetFinishedAtUnixNano() != h.now.UnixNano():
		t.Fatalf("run finished at %d, want the cancel's time %d", run.GetFinishedAtUnixNano(), h.now.UnixNano())
	case a.GetState() != stCancelled || a.GetToken() != fired.GetToken():
		t.Fatalf("attempt %v, want the executing attempt CANCELLED", a)
	}
	if got := h.run(run.GetId()); got.GetState() != stCancelled {
		t.Fatalf("stored run %v, want CANCELLED", got)
	}
	st := h.status("billing")
	if len(st.GetOpenRunIds()) != 0 || st.GetLastRunId() != run.GetId() || st.GetLastOutcome() != stCancelled ||
		st.GetFailed() != 0 || st.GetSucceeded() != 0 {
		t.Fatalf("status %v, want no open run and the cancelled one as the last, counted as neither", st)
	}
	if h.f.FencingToken() != token {
		t.Fatalf("a cancel took token %d", h.f.FencingToken())
	}
	if len(h.f.OpenRuns()) != 0 {
		t.Fatalf("open runs after the cancel: %v", ids(h.f.OpenRuns()))
	}

	// The executor's late report is superseded and changes nothing.
	before := h.f.StateHash()
	if res := h.complete(done(fired.GetRun(), stSucceeded, h.now))[0]; res.GetAccepted() || res.GetReason() != fsm.ReasonSuperseded {
		t.Fatalf("late report: %v, want superseded", res)
	}
	if h.f.StateHash() != before {
		t.Fatal("the late report of a cancelled attempt changed the state")
	}
}

func TestCancelledAtLeastOnceRunIsNeverRedispatched(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("billing")) // at_least_once
	fired := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	h.cancel(fired.GetRunId())
	// A leader of a later term reconciles the run it no longer sees open.
	before := h.f.StateHash()
	r := h.fireAs("n2", leaderTerm+1, []*pb.Fire{redispatchFire("billing", fired.GetRunId())}, nil)[0]
	if r.GetAccepted() || r.GetReason() != fsm.ReasonNotOrphan {
		t.Fatalf("re-dispatch of a cancelled run: %v, want refused %s", r, fsm.ReasonNotOrphan)
	}
	if h.f.StateHash() != before {
		t.Fatal("the refused re-dispatch changed the state")
	}
}

func TestCancelStopsAWaitingRetry(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withRetry(testSpec("billing"), 3, time.Second, time.Second))
	fired := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	h.finish(fired.GetRun(), stFailed, h.now)
	if got := h.run(fired.GetRunId()); got.GetState() != stRetrying {
		t.Fatalf("run %v, want RETRYING", got)
	}
	run := h.cancel(fired.GetRunId())
	if run.GetState() != stCancelled || run.GetNextAttemptAtUnixNano() != 0 || fsm.CurrentAttempt(run).GetState() != stFailed {
		t.Fatalf("run %v, want CANCELLED with no retry due and the failed attempt kept", run)
	}
	h.now = h.now.Add(time.Minute)
	h.refused(retryFire("billing", fired.GetRunId()), fsm.ReasonNotOpen)
}

func TestCancelOfARunOfADeletedJob(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("billing"))
	fired := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	h.mustOK(deleteCmd("billing", 0))
	if run := h.cancel(fired.GetRunId()); run.GetState() != stCancelled {
		t.Fatalf("run %v, want CANCELLED", run)
	}
}

func TestCancelRefusals(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("billing"))
	fired := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	h.finish(fired.GetRun(), stSucceeded, h.now)

	r := h.mustFail(cancelCmd(fired.GetRunId()), pb.ResultCode_RESULT_CODE_RUN_FINISHED, fsm.ErrRunFinished)
	if want := `run "billing-1" is finished (succeeded): there is nothing to cancel`; r.GetMessage() != want {
		t.Fatalf("message %q, want %q", r.GetMessage(), want)
	}
	h.mustFail(cancelCmd("billing-99"), pb.ResultCode_RESULT_CODE_NOT_FOUND, fsm.ErrNotFound)
	h.mustFail(cancelCmd(""), pb.ResultCode_RESULT_CODE_MALFORMED, fsm.ErrMalformed)
}

func TestCancelSurvivesSnapshotAndRestore(t *testing.T) {
	h := newHarness(t)
	gen := h.create(testSpec("billing"))
	fired := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	h.cancel(fired.GetRunId())
	g := fsm.New()
	if err := restore(g, persist(t, h.f)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if g.StateHash() != h.f.StateHash() {
		t.Fatal("restored state differs")
	}
	if r, err := g.Run(fired.GetRunId()); err != nil || r.GetState() != stCancelled || len(g.OpenRuns()) != 0 {
		t.Fatalf("restored run %v (%v), open runs %d: want CANCELLED and nothing open", r, err, len(g.OpenRuns()))
	}
}
