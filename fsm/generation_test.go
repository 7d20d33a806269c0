package fsm_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// retarget updates name's target, which starts a new generation, and
// returns it.
func (h *harness) retarget(name, url string) uint64 {
	h.t.Helper()
	job, err := h.f.Job(name)
	if err != nil {
		h.t.Fatal(err)
	}
	spec := proto.CloneOf(job.GetSpec())
	spec.Http.Url = url
	gen := h.mustOK(updateCmd(spec, 0)).GetJob().GetGeneration()
	if gen != job.GetGeneration()+1 {
		h.t.Fatalf("retarget %s: generation %d, want %d", name, gen, job.GetGeneration()+1)
	}
	return gen
}

// A manual fire is checked against the job's generation like a scheduled
// one, and an accepted one carries the spec it was accepted under.
func TestManualFireChecksGeneration(t *testing.T) {
	h := newHarness(t)
	old := h.create(testSpec("billing"))
	gen := h.retarget("billing", "http://billing.test/v2")
	h.refused(ofGeneration(manualFire("billing", "r1", false), old), fsm.ReasonGeneration)
	r := h.accepted(ofGeneration(manualFire("billing", "r1", false), gen))
	if r.GetSpec().GetHttp().GetUrl() != "http://billing.test/v2" || r.GetRun().GetGeneration() != gen {
		t.Errorf("accepted manual fire: spec %v, run %v; want generation %d's spec and run", r.GetSpec(), r.GetRun(), gen)
	}
	// A retried trigger still finds its run, whatever the generation.
	h.refused(ofGeneration(manualFire("billing", "r1", false), old), fsm.ReasonDuplicateRequest)
}

// Every accepted attempt carries the spec the FSM accepted it under, for
// the dispatcher: scheduled, retried and re-dispatched alike.
func TestAcceptedFiresCarryTheirSpec(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withRetry(testSpec("billing"), 3, time.Second, time.Second))
	want, err := h.f.Job("billing")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, r *pb.FireResult) {
		t.Helper()
		if got := r.GetSpec(); got.GetName() != "billing" || !proto.Equal(got.GetHttp(), want.GetSpec().GetHttp()) ||
			!proto.Equal(got.GetRetry(), want.GetSpec().GetRetry()) {
			t.Errorf("%s: spec %v, want the job's %v", what, got, want.GetSpec())
		}
	}
	fired := h.accepted(slotFire("billing", gen, h.nextSlot("billing")))
	check("scheduled", fired)
	run := h.finish(fired.GetRun(), stFailed, h.now)
	h.now = time.Unix(0, run.GetNextAttemptAtUnixNano())
	retried := h.accepted(ofGeneration(retryFire("billing", run.GetId()), gen))
	check("retry", retried)
	redispatched := h.fireAs("n2", leaderTerm+1, []*pb.Fire{ofGeneration(redispatchFire("billing", run.GetId()), gen)}, nil)[0]
	if !redispatched.GetAccepted() {
		t.Fatalf("redispatch: %v", redispatched)
	}
	check("redispatch", redispatched)
}

// A retry or re-dispatch that names another generation than its run's is
// refused and changes nothing.
func TestRunFireOfAnotherGenerationRefused(t *testing.T) {
	h := newHarness(t)
	gen := h.create(withRetry(testSpec("billing"), 3, time.Second, time.Second))
	run := h.finish(h.accepted(slotFire("billing", gen, h.nextSlot("billing"))).GetRun(), stFailed, h.now)
	h.now = time.Unix(0, run.GetNextAttemptAtUnixNano())
	h.refused(ofGeneration(retryFire("billing", run.GetId()), gen+1), fsm.ReasonGeneration)

	other := h.create(testSpec("other"))
	orphan := h.accepted(slotFire("other", other, h.nextSlot("other"))).GetRun()
	before := h.f.StateHash()
	r := h.fireAs("n2", leaderTerm+1, []*pb.Fire{ofGeneration(redispatchFire("other", orphan.GetId()), other+1)}, nil)[0]
	if r.GetAccepted() || r.GetReason() != fsm.ReasonGeneration || h.f.StateHash() != before {
		t.Errorf("redispatch naming generation %d: %v, want refused %q with nothing changed", other+1, r, fsm.ReasonGeneration)
	}
}

// Updating a job's target ends its runs waiting for a retry: a retry of
// generation g must never run g+1's target under g's idempotency key.
func TestRetargetCancelsWaitingRetries(t *testing.T) {
	h := newHarness(t)
	old := h.create(withRetry(testSpec("billing"), 3, time.Second, time.Second))
	run := h.finish(h.accepted(slotFire("billing", old, h.nextSlot("billing"))).GetRun(), stFailed, h.now)
	if run.GetState() != stRetrying {
		t.Fatalf("failed first attempt: %v, want RETRYING", run)
	}
	h.retarget("billing", "http://billing.test/v2")
	got := h.run(run.GetId())
	if got.GetState() != stCancelled || got.GetReason() != fsm.ReasonGeneration {
		t.Errorf("waiting run after the retarget: %v, want CANCELLED with reason %q", got, fsm.ReasonGeneration)
	}
	if st := h.status("billing"); len(st.GetOpenRunIds()) != 0 || st.GetLastRunId() != run.GetId() {
		t.Errorf("status %v, want the run closed and recorded last", st)
	}
	h.now = time.Unix(0, run.GetNextAttemptAtUnixNano())
	h.refused(ofGeneration(retryFire("billing", run.GetId()), old), fsm.ReasonNotOpen)

	// An update that keeps the target keeps the waiting run.
	gen := h.create(withRetry(testSpec("other"), 3, time.Second, time.Second))
	run = h.finish(h.accepted(slotFire("other", gen, h.nextSlot("other"))).GetRun(), stFailed, h.now)
	spec := withRetry(testSpec("other"), 3, time.Second, time.Second)
	spec.Labels = map[string]string{"team": "other"}
	h.mustOK(updateCmd(spec, 0))
	if got := h.run(run.GetId()); got.GetState() != stRetrying {
		t.Errorf("waiting run after an update of labels only: %v, want still RETRYING", got)
	}
}

// An attempt of generation g still executing when the job moves to g+1 may
// report its outcome, but a failure is not retried under the new target.
func TestOldGenerationFailureIsNotRetried(t *testing.T) {
	h := newHarness(t)
	old := h.create(withRetry(testSpec("billing"), 3, time.Second, time.Second))
	run := h.accepted(slotFire("billing", old, h.nextSlot("billing"))).GetRun()
	h.retarget("billing", "http://billing.test/v2")
	run = h.finish(run, stFailed, h.now)
	if run.GetState() != stFailed || run.GetFinishedAtUnixNano() == 0 {
		t.Errorf("failure of generation %d after the retarget: %v, want FAILED, not RETRYING", old, run)
	}
	if st := h.status("billing"); len(st.GetOpenRunIds()) != 0 || st.GetFailed() != 1 {
		t.Errorf("status %v, want the run closed and counted failed", st)
	}
}

// An at_least_once orphan of generation g found by a new leader after the
// job moved to g+1 is not re-dispatched: its outcome stays unknown, and the
// run ends UNKNOWN with reason generation.
func TestOrphanOfOldGenerationIsNotRedispatched(t *testing.T) {
	h := newHarness(t)
	old := h.create(testSpec("billing"))
	orphan := h.accepted(slotFire("billing", old, h.nextSlot("billing"))).GetRun()
	h.retarget("billing", "http://billing.test/v2")
	token := h.f.FencingToken()
	r := h.fireAs("n2", leaderTerm+1, []*pb.Fire{ofGeneration(redispatchFire("billing", orphan.GetId()), old)}, nil)[0]
	if r.GetAccepted() || r.GetReason() != fsm.ReasonGeneration || r.GetToken() != 0 || h.f.FencingToken() != token {
		t.Fatalf("redispatch of generation %d's orphan: %v, want refused %q without a token", old, r, fsm.ReasonGeneration)
	}
	got := h.run(orphan.GetId())
	if got.GetState() != stUnknown || got.GetReason() != fsm.ReasonGeneration || fsm.CurrentAttempt(got).GetState() != stUnknown {
		t.Errorf("orphan after the refusal: %v, want UNKNOWN with reason %q", got, fsm.ReasonGeneration)
	}
	if st := h.status("billing"); len(st.GetOpenRunIds()) != 0 {
		t.Errorf("status %v, want no open run", st)
	}
}
