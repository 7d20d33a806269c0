package fsm_test

import (
	"testing"
	"time"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// lostFire re-dispatches the attempt of run r (of generation gen) that
// carries token.
func lostFire(job string, gen uint64, runID string, token uint64) *pb.Fire {
	return &pb.Fire{Job: job, Generation: gen, Kind: kindRedispatch, RunId: runID, LostToken: token}
}

func workerSpec(name string) *pb.JobSpec {
	spec := testSpec(name)
	spec.Http = nil
	spec.Worker = &pb.WorkerTarget{Pool: "batch", Command: []string{"/bin/true"}}
	return spec
}

// A worker that missed its lease loses its attempt in the very term that
// dispatched it: the leader re-dispatches it by naming its token, and the
// new attempt gets a larger one; the lost worker's late report is
// superseded.
func TestRedispatchOfLostAttemptSupersedesItInTheSameTerm(t *testing.T) {
	h := newHarness(t)
	gen := h.create(workerSpec("billing"))
	first := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))

	res := h.accepted(lostFire("billing", gen, first.GetRunId(), first.GetToken()))
	atts := res.GetRun().GetAttempts()
	switch {
	case res.GetToken() <= first.GetToken() || res.GetAttempt() != 2:
		t.Fatalf("re-dispatch of the lost attempt: %v, want attempt 2 with a token above %d", res, first.GetToken())
	case atts[0].GetState() != stSuperseded || atts[1].GetKind() != kindRedispatch || atts[1].GetTerm() != leaderTerm:
		t.Fatalf("attempts %v, want the lost one SUPERSEDED and a REDISPATCH of term %d", atts, leaderTerm)
	}
	if r := h.complete(done(first.GetRun(), stSucceeded, h.now))[0]; r.GetAccepted() || r.GetReason() != fsm.ReasonSuperseded {
		t.Fatalf("late report of the lost attempt: %v, want superseded", r)
	}
	// The lost token is no longer current: naming it again resolves nothing.
	h.refused(lostFire("billing", gen, first.GetRunId(), first.GetToken()), fsm.ReasonNotOrphan)
}

func TestRedispatchOfLostAttemptAtMostOnceMarksUnknown(t *testing.T) {
	h := newHarness(t)
	spec := workerSpec("billing")
	spec.Delivery = pb.Delivery_DELIVERY_AT_MOST_ONCE
	gen := h.create(spec)
	first := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	token := h.f.FencingToken()

	res := h.fireOne(lostFire("billing", gen, first.GetRunId(), first.GetToken()))
	run := res.GetRun()
	if res.GetAccepted() || res.GetReason() != fsm.ReasonUnknown || h.f.FencingToken() != token {
		t.Fatalf("at_most_once lost attempt: %v, want refused as unknown without a token", res)
	}
	if run.GetState() != stUnknown || run.GetReason() != fsm.ReasonWorkerLost || fsm.CurrentAttempt(run).GetState() != stUnknown {
		t.Fatalf("run %v, want UNKNOWN (worker_lost)", run)
	}
}

// Only the current attempt can be lost: a token the run has moved past
// (it finished, or was retried) resolves nothing, and neither does a run
// of another job.
func TestRedispatchOfLostAttemptNeedsItsCurrentToken(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withRetry(workerSpec("billing"), 3, time.Hour, time.Hour))
	first := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	h.refused(lostFire("billing", gen, first.GetRunId(), first.GetToken()+1), fsm.ReasonNotOrphan)
	h.refused(lostFire("other", gen, first.GetRunId(), first.GetToken()), fsm.ReasonNotOrphan)
	h.finish(first.GetRun(), stFailed, h.now) // RETRYING
	h.refused(lostFire("billing", gen, first.GetRunId(), first.GetToken()), fsm.ReasonNotOrphan)
}

func TestWorkerTargetChangeStartsNewGeneration(t *testing.T) {
	h := newHarness(t)
	spec := workerSpec("billing")
	gen := h.create(spec)
	spec = cloneSpec(spec)
	spec.Worker.Pool = "other"
	if got := h.mustOK(updateCmd(spec, 0)).GetJob().GetGeneration(); got != gen+1 {
		t.Fatalf("generation after a pool change %d, want %d", got, gen+1)
	}
	spec = cloneSpec(spec)
	spec.Worker = nil
	spec.Http = &pb.HttpTarget{Url: "http://billing.internal/run"}
	if got := h.mustOK(updateCmd(spec, 0)).GetJob().GetGeneration(); got != gen+2 {
		t.Fatalf("generation after worker → http %d, want %d", got, gen+2)
	}
}

// A lost attempt of a run whose job has moved to another generation is not
// run again under the new target: it is given up like an orphan of it.
func TestRedispatchOfLostAttemptOfAnEarlierGenerationGivesItUp(t *testing.T) {
	h := newHarness(t)
	spec := workerSpec("billing")
	spec.Overlap = pb.Overlap_OVERLAP_ALLOW // the update leaves the run open
	gen := h.create(spec)
	first := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	spec = cloneSpec(spec)
	spec.Worker.Pool = "other"
	h.mustOK(updateCmd(spec, 0))

	res := h.fireOne(lostFire("billing", gen, first.GetRunId(), first.GetToken()))
	if res.GetAccepted() || res.GetReason() != fsm.ReasonGeneration || res.GetRun().GetState() != stUnknown {
		t.Fatalf("lost attempt of generation %d after an update: %v, want given up (generation)", gen, res)
	}
}
