package fsm_test

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	stDispatched = pb.RunState_RUN_STATE_DISPATCHED
	stSucceeded  = pb.RunState_RUN_STATE_SUCCEEDED
	stFailed     = pb.RunState_RUN_STATE_FAILED
	stFenced     = pb.RunState_RUN_STATE_FENCED
	stDeadline   = pb.RunState_RUN_STATE_DEADLINE_EXCEEDED
	stUnknown    = pb.RunState_RUN_STATE_UNKNOWN
	stSuperseded = pb.RunState_RUN_STATE_SUPERSEDED
	stMissed     = pb.RunState_RUN_STATE_MISSED
	stCancelled  = pb.RunState_RUN_STATE_CANCELLED
	stRetrying   = pb.RunState_RUN_STATE_RETRYING

	kindScheduled  = pb.FireKind_FIRE_KIND_SCHEDULED
	kindCatchup    = pb.FireKind_FIRE_KIND_CATCHUP
	kindRetry      = pb.FireKind_FIRE_KIND_RETRY
	kindRedispatch = pb.FireKind_FIRE_KIND_REDISPATCH
	kindManual     = pb.FireKind_FIRE_KIND_MANUAL
)

// The leader the harness fires as, unless a test says otherwise.
const (
	leaderID   = "n1"
	leaderTerm = 5
)

func fireBatchCmd(leader string, term uint64, fires []*pb.Fire, misses []*pb.Miss) *pb.Command {
	return &pb.Command{Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{
		LeaderId: leader, Term: term, Fires: fires, Misses: misses,
	}}}
}

func completeBatchCmd(cs ...*pb.Completion) *pb.Command {
	return &pb.Command{Kind: &pb.Command_CompleteBatch{CompleteBatch: &pb.CompleteBatchCommand{Completions: cs}}}
}

func slotFire(job string, generation uint64, slot int64) *pb.Fire {
	return &pb.Fire{Job: job, Generation: generation, SlotUnix: slot, Kind: kindScheduled}
}

// manualFire, retryFire and redispatchFire are for generation 1, the
// generation of a job created once and never retargeted; ofGeneration
// names another.

func manualFire(job, requestID string, force bool) *pb.Fire {
	return &pb.Fire{Job: job, Generation: 1, Kind: kindManual, RequestId: requestID, Force: force}
}

func retryFire(job, runID string) *pb.Fire {
	return &pb.Fire{Job: job, Generation: 1, Kind: kindRetry, RunId: runID}
}

func redispatchFire(job, runID string) *pb.Fire {
	return &pb.Fire{Job: job, Generation: 1, Kind: kindRedispatch, RunId: runID}
}

func ofGeneration(f *pb.Fire, gen uint64) *pb.Fire {
	f.Generation = gen
	return f
}

// fire applies one FireBatch as the harness leader and returns its results.
func (h *harness) fire(fires ...*pb.Fire) []*pb.FireResult {
	h.t.Helper()
	return h.fireAs(leaderID, leaderTerm, fires, nil)
}

func (h *harness) fireAs(leader string, term uint64, fires []*pb.Fire, misses []*pb.Miss) []*pb.FireResult {
	h.t.Helper()
	r := h.mustOK(fireBatchCmd(leader, term, fires, misses))
	if len(r.GetFires()) != len(fires) {
		h.t.Fatalf("%d fire results for %d fires", len(r.GetFires()), len(fires))
	}
	return r.GetFires()
}

// fireOne applies a batch of one fire and returns its result.
func (h *harness) fireOne(f *pb.Fire) *pb.FireResult {
	h.t.Helper()
	return h.fire(f)[0]
}

// accepted fires f and fails unless it was accepted.
func (h *harness) accepted(f *pb.Fire) *pb.FireResult {
	h.t.Helper()
	r := h.fireOne(f)
	if !r.GetAccepted() || r.GetToken() == 0 || r.GetRun() == nil {
		h.t.Fatalf("fire %v: %v, want accepted with a token and a run", f, r)
	}
	return r
}

// refused fires f alone, expects the reason, and checks that nothing
// changed.
func (h *harness) refused(f *pb.Fire, reason string) *pb.FireResult {
	h.t.Helper()
	before, token := h.f.StateHash(), h.f.FencingToken()
	r := h.fire(f)[0]
	if r.GetAccepted() || r.GetReason() != reason || r.GetToken() != 0 {
		h.t.Fatalf("fire %v: %v, want refused with reason %q and no token", f, r, reason)
	}
	if h.f.StateHash() != before || h.f.FencingToken() != token {
		h.t.Fatalf("refused fire %v (%s) changed the state", f, reason)
	}
	return r
}

// missed fires f alone and expects a MISSED record with the reason.
func (h *harness) missed(f *pb.Fire, reason string) *pb.Run {
	h.t.Helper()
	token := h.f.FencingToken()
	r := h.fireOne(f)
	run := r.GetRun()
	if r.GetAccepted() || r.GetReason() != reason || r.GetToken() != 0 ||
		run.GetState() != stMissed || run.GetReason() != reason || run.GetId() != r.GetRunId() {
		h.t.Fatalf("fire %v: %v, want a MISSED record with reason %q", f, r, reason)
	}
	if h.f.FencingToken() != token {
		h.t.Fatalf("a missed slot took token %d", h.f.FencingToken())
	}
	if got := h.run(run.GetId()); got.GetState() != stMissed {
		h.t.Fatalf("stored MISSED record is %v", got)
	}
	return run
}

func (h *harness) complete(cs ...*pb.Completion) []*pb.CompletionResult {
	h.t.Helper()
	r := h.mustOK(completeBatchCmd(cs...))
	if len(r.GetCompletions()) != len(cs) {
		h.t.Fatalf("%d completion results for %d completions", len(r.GetCompletions()), len(cs))
	}
	return r.GetCompletions()
}

// finish reports outcome for the current attempt of run at finishedAt and
// insists it was accepted.
func (h *harness) finish(run *pb.Run, outcome pb.RunState, finishedAt time.Time) *pb.Run {
	h.t.Helper()
	res := h.complete(done(run, outcome, finishedAt))[0]
	if !res.GetAccepted() {
		h.t.Fatalf("completion %v of %s: %v, want accepted", outcome, run.GetId(), res)
	}
	return res.GetRun()
}

// finishOpen reports success for every open run of the job.
func (h *harness) finishOpen(name string) {
	h.t.Helper()
	for _, id := range h.status(name).GetOpenRunIds() {
		h.finish(h.run(id), stSucceeded, h.now)
	}
}

// done is the completion of run's current attempt.
func done(run *pb.Run, outcome pb.RunState, finishedAt time.Time) *pb.Completion {
	return &pb.Completion{
		RunId:              run.GetId(),
		Token:              fsm.CurrentAttempt(run).GetToken(),
		Outcome:            outcome,
		StartedAtUnixNano:  finishedAt.Add(-time.Second).UnixNano(),
		FinishedAtUnixNano: finishedAt.UnixNano(),
		Detail:             outcome.String(),
	}
}

func (h *harness) status(name string) *pb.JobStatus {
	h.t.Helper()
	st, err := h.f.JobStatus(name)
	if err != nil {
		h.t.Fatalf("JobStatus(%q): %v", name, err)
	}
	return st
}

func (h *harness) run(id string) *pb.Run {
	h.t.Helper()
	r, err := h.f.Run(id)
	if err != nil {
		h.t.Fatalf("Run(%q): %v", id, err)
	}
	return r
}

// create registers a job from spec and returns its generation.
func (h *harness) create(spec *pb.JobSpec) uint64 {
	h.t.Helper()
	return h.mustOK(createCmd(spec)).GetJob().GetGeneration()
}

// nextSlot is a slot after name's cursor.
func (h *harness) nextSlot(name string) int64 {
	h.t.Helper()
	return h.status(name).GetCursorUnix() + 60
}

func withOverlap(spec *pb.JobSpec, o pb.Overlap) *pb.JobSpec {
	spec.Overlap = o
	return spec
}

func withRetry(spec *pb.JobSpec, attempts uint32, initial, maxBackoff time.Duration) *pb.JobSpec {
	spec.Retry = &pb.Retry{MaxAttempts: attempts}
	if initial > 0 {
		spec.Retry.InitialBackoff = durationpb.New(initial)
	}
	if maxBackoff > 0 {
		spec.Retry.MaxBackoff = durationpb.New(maxBackoff)
	}
	return spec
}

func ids(runs []*pb.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.GetId()
	}
	return out
}
