package scheduler

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftcron/raftcron/fsm"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// runReads counts the runs the scheduler reads (planning a job with an
// open run reads it) and the jobs (planning a job reads it).
type runReads struct {
	State
	n    atomic.Int64
	jobs atomic.Int64
}

func (s *runReads) Run(id string) (*pb.Run, error) {
	s.n.Add(1)
	return s.State.Run(id)
}

func (s *runReads) StoredJob(name string) (fsm.StoredJob, error) {
	s.jobs.Add(1)
	return s.State.StoredJob(name)
}

// firedOnce leads with one job every 10 s, whose first slot fires and
// stays running, reading the state through a runReads.
func firedOnce(t *testing.T) (*harness, *runReads) {
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
	return h, rr
}

// A job whose fire was accepted is not planned again because of that fire:
// its next slot was known when it was planned. It still fires on time.
func TestAcceptedFireIsNotPlannedAgain(t *testing.T) {
	h, rr := firedOnce(t)
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

// A job whose fires were accepted as planned is planned again on any
// other change: every way the job or its run can change after the fire
// comes in an entry of its own, which the observer hears.
func TestChangeAfterAcceptedFireIsPlanned(t *testing.T) {
	cases := []struct {
		name   string
		change func(h *harness)
	}{
		{"job paused", func(h *harness) { h.setPaused("job", true) }},
		{"run cancelled", func(h *harness) { h.apply(cancelCommand(h.openRun("job").GetId())) }},
		{"outcome committed", func(h *harness) { h.release("job") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, rr := firedOnce(t)
			before := rr.jobs.Load()
			c.change(h)
			h.waitFor("the job to be planned again", func() bool { return rr.jobs.Load() > before })
		})
	}
}

// The scheduler does not hear its own FireBatch entries come back through
// the FSM, nor remote workers' progress, and hears every other change:
// another leader's entries, every other command, a snapshot restored.
func TestOnlyOwnFireBatchAndProgressAreNotHeard(t *testing.T) {
	cases := []struct {
		name  string
		from  fsm.Origin
		heard bool
	}{
		{"own fire batch", fsm.Origin{Kind: fsm.KindFireBatch, Leader: "n1"}, false},
		{"another leader's fire batch", fsm.Origin{Kind: fsm.KindFireBatch, Leader: "n2"}, true},
		{"job written", fsm.Origin{Kind: "put_job"}, true},
		{"job paused", fsm.Origin{Kind: "set_paused"}, true},
		{"job deleted", fsm.Origin{Kind: "delete_job"}, true},
		{"outcome committed", fsm.Origin{Kind: "complete_batch"}, true},
		{"run cancelled", fsm.Origin{Kind: "cancel_run"}, true},
		{"snapshot restored", fsm.Origin{Kind: fsm.KindRestore}, true},
		{"progress recorded", fsm.Origin{Kind: fsm.KindRecordProgress}, false},
	}
	h := newHarness(t)
	h.s.setTracking(true) // as while a loop plans
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.s.JobsChanged(c.from, []string{"a"})
			if got := h.s.takeDirty(nil); (len(got) > 0) != c.heard {
				t.Errorf("JobsChanged: marked %v, want heard = %v", got, c.heard)
			}
			h.s.RunsChanged(c.from, []*pb.Run{{Id: "a-1", Job: "a"}})
			if got := h.s.takeDirty(nil); (len(got) > 0) != c.heard {
				t.Errorf("RunsChanged: marked %v, want heard = %v", got, c.heard)
			}
		})
	}
}
