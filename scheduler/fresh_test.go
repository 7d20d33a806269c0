package scheduler

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fsm"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// runReads counts the runs the scheduler reads: planning a job with an
// open run reads it.
type runReads struct {
	State
	n atomic.Int64
}

func (s *runReads) Run(id string) (*pb.Run, error) {
	s.n.Add(1)
	return s.State.Run(id)
}

// A job whose fire was accepted is not planned again because of that fire:
// its next slot was known when it was planned. It still fires on time.
func TestAcceptedFireIsNotPlannedAgain(t *testing.T) {
	rr := &runReads{}
	h := newHarness(t, func(c *Config) {
		rr.State = c.State
		c.State = rr
	})
	h.putJob(spec("job", "@every 10s"))
	h.exec.gate("job")
	h.lead()
	h.clock.Advance(10 * time.Second)
	h.settle()
	if n := rr.n.Load(); n != 0 {
		t.Fatalf("%d runs read after the fire, want 0: the job was planned again", n)
	}
	h.release("job")
	h.step(10 * time.Second)
	if got := h.startedSlots("job"); !slices.Equal(got, []int64{10, 20}) {
		t.Fatalf("slots = %v, want [10 20]", got)
	}
}

// A spec change that follows an accepted fire is planned at once: the new
// schedule's earlier slot is not left to the wake-up of the old one.
func TestSpecChangeAfterAcceptedFireIsPlanned(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.exec.gate("job")
	h.lead()
	h.step(10 * time.Second) // slot 10 fires and stays running
	faster := withOverlap(pb.Overlap_OVERLAP_SKIP)
	faster.Schedule = "@every 5s"
	h.putJob(faster)
	h.step(5 * time.Second) // slot 15 comes due while 10 runs: skipped
	if m := missedReasons(h, "job"); m["overlap_skipped"] != 1 {
		t.Fatalf("missed = %v, want slot 15 overlap_skipped", m)
	}
	h.release("job")
}

// A fresh plan stands only while the job and its status are exactly what
// the accepted fires made of them: any other change, and every way an
// outcome can come back, sends the job to be planned again.
func TestFreshPlanStandsOnlyWhileNothingChanged(t *testing.T) {
	now := t0.Add(10 * time.Second)
	job := &pb.Job{Spec: spec("job", "@every 10s")}
	fired := func() *pb.JobStatus {
		return &pb.JobStatus{CursorUnix: 10, LatestToken: 7, OpenRunIds: []string{"run-7"}}
	}
	f := freshPlan{job: job, cursor: 10, runs: []string{"run-7"}, tokens: []uint64{7}}
	cases := []struct {
		name   string
		change func(l *leader, sj *fsm.StoredJob)
		want   bool
	}{
		{"nothing changed", func(*leader, *fsm.StoredJob) {}, true},
		{"job replaced", func(_ *leader, sj *fsm.StoredJob) { sj.Job = &pb.Job{Spec: job.GetSpec()} }, false},
		{"cursor moved", func(_ *leader, sj *fsm.StoredJob) { sj.Status.CursorUnix = 20 }, false},
		{"slot buffered", func(_ *leader, sj *fsm.StoredJob) { sj.Status.BufferedSlotUnix = 20 }, false},
		{"newer attempt", func(_ *leader, sj *fsm.StoredJob) { sj.Status.LatestToken = 8 }, false},
		{"run closed", func(_ *leader, sj *fsm.StoredJob) { sj.Status.OpenRunIds = nil }, false},
		{"other run open", func(_ *leader, sj *fsm.StoredJob) { sj.Status.OpenRunIds = []string{"run-6"} }, false},
		{"outcome committed", func(l *leader, _ *fsm.StoredJob) { delete(l.known, 7) }, false},
		{"wake-up due", func(l *leader, _ *fsm.StoredJob) { l.heap.set("job", now.UnixNano()) }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := &leader{heap: newDueHeap(1), known: map[uint64]struct{}{7: {}}}
			l.heap.set("job", now.Add(10*time.Second).UnixNano())
			sj := fsm.StoredJob{Job: job, Status: fired()}
			c.change(l, &sj)
			if got := f.still(l, "job", sj, now); got != c.want {
				t.Fatalf("still = %v, want %v", got, c.want)
			}
		})
	}
}
