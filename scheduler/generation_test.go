package scheduler

import (
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// putCmd is an upsert of s stamped at the harness clock.
func (h *harness) putCmd(s *pb.JobSpec) *pb.Command {
	return &pb.Command{
		ProposedAtUnixNano: h.clock.Now().UnixNano(),
		Kind:               &pb.Command_PutJob{PutJob: &pb.PutJobCommand{Spec: s, Mode: pb.PutMode_PUT_MODE_UPSERT}},
	}
}

// The hand-off runs the spec the FSM accepted a fire under, not the one
// read while planning: a change committed between the two is what runs.
func TestDispatchRunsTheAcceptedSpec(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.lead()
	changed := withOverlap(pb.Overlap_OVERLAP_SKIP)
	changed.Deadline = durationpb.New(7 * time.Second) // same target: same generation
	var once atomic.Bool
	h.prop.setHook(func(cmd *pb.Command) (error, bool) {
		if cmd.GetFireBatch() != nil && !once.Swap(true) {
			if res := h.prop.commitLocked(h.putCmd(changed)); res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
				t.Errorf("update before the fire: %v", res)
			}
		}
		return nil, false
	})
	h.step(10 * time.Second)
	started := h.exec.startedOf("job")
	if len(started) != 1 {
		t.Fatalf("started %v, want slot 10 once", h.startedSlots("job"))
	}
	if started[0].Deadline != 7*time.Second {
		t.Errorf("dispatched with deadline %v, want the accepted spec's 7s", started[0].Deadline)
	}
}

// An attempt committed despite an Apply error is adopted only while its
// job is still of the run's generation: after a retarget it is never
// dispatched (the new target under the old slot's key would be another
// job), and the run is closed CANCELLED instead.
func TestAdoptionSkipsAttemptsOfAnEarlierGeneration(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.lead()
	var failed atomic.Bool
	h.prop.setHook(func(cmd *pb.Command) (error, bool) {
		if cmd.GetFireBatch() != nil && !failed.Swap(true) {
			return errInjected, true
		}
		return nil, false
	})
	h.clock.Advance(10 * time.Second)
	h.waitFor("the failed proposal", func() bool { return failed.Load() && h.clock.Waiters() > 0 })
	open := status(h, "job").GetOpenRunIds()
	if len(open) != 1 {
		t.Fatalf("open runs %v, want the committed one", open)
	}
	retargeted := withOverlap(pb.Overlap_OVERLAP_SKIP)
	retargeted.Http.Url = "http://127.0.0.1:1/v2"
	h.putJob(retargeted)
	h.clock.Advance(fireRetry)
	h.settle()
	h.step(5 * time.Second)
	for _, a := range h.exec.startedOf("job") {
		if a.RunID == open[0] {
			t.Errorf("run %s of the old generation was dispatched to %s", open[0], a.HTTP.GetUrl())
		}
	}
	run, err := h.fsm.Run(open[0])
	if err != nil || run.GetState() != pb.RunState_RUN_STATE_CANCELLED {
		t.Errorf("run %s: %v, %v; want CANCELLED", open[0], run, err)
	}
}

// An allow job whose runs hang opens at most MaxOpenRuns of them: every
// FireBatch carries the limit, and a slot beyond it is recorded missed
// (open_runs_limit) instead of dispatched.
func TestOpenRunsOfAnAllowJobAreCapped(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxOpenRuns = 2 })
	h.putJob(withOverlap(pb.Overlap_OVERLAP_ALLOW))
	h.exec.gate("job")
	h.lead()
	h.step(30 * time.Second)
	if got := h.startedSlots("job"); len(got) != 2 {
		t.Fatalf("started slots %v, want the first 2 only", got)
	}
	missed := h.runsIn("job", pb.RunState_RUN_STATE_MISSED)
	if len(missed) != 1 || missed[0].GetReason() != "open_runs_limit" {
		t.Fatalf("missed runs %v, want slot 30 recorded open_runs_limit", missed)
	}
	for _, fb := range h.prop.fireBatches() {
		if fb.GetMaxOpenRuns() != 2 {
			t.Fatalf("a FireBatch carries max_open_runs %d, want 2", fb.GetMaxOpenRuns())
		}
	}
}
