package scheduler

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// fakeRemote stands for the worker service: it keeps what it is handed
// until the test reports on it.
type fakeRemote struct {
	mu  sync.Mutex
	got []remoteAttempt
	// unacked is what Unacked reports: offers no worker acknowledged.
	unacked atomic.Int64
}

type remoteAttempt struct {
	ctx  context.Context
	a    dispatch.Attempt
	done func(dispatch.Attempt, dispatch.Outcome)
}

func (r *fakeRemote) Submit(ctx context.Context, a dispatch.Attempt, done func(dispatch.Attempt, dispatch.Outcome)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, remoteAttempt{ctx: ctx, a: a, done: done})
	return nil
}

func (r *fakeRemote) Unacked() int { return int(r.unacked.Load()) }

func (r *fakeRemote) attempts() []remoteAttempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]remoteAttempt(nil), r.got...)
}

func withRemote(r Remote) harnessOpt { return func(c *Config) { c.Remote = r } }

func workerJob(name string) *pb.JobSpec {
	s := spec(name, "@every 10s")
	s.Http = nil
	s.Worker = &pb.WorkerTarget{Pool: "batch", Command: []string{"/bin/true"}}
	return s
}

func succeeded(h *harness) dispatch.Outcome {
	now := h.clock.Now()
	return dispatch.Outcome{State: pb.RunState_RUN_STATE_SUCCEEDED, Detail: "exit status 0", StartedAt: now, FinishedAt: now}
}

// An attempt whose worker is lost is re-dispatched in the same term with a
// larger token, to the worker service again; the lost worker's late
// outcome is committed and superseded.
func TestLostWorkerAttemptIsRedispatchedWithLargerToken(t *testing.T) {
	r := &fakeRemote{}
	h := newHarness(t, withRemote(r))
	h.putJob(workerJob("render"))
	h.lead()
	h.waiting = 1 // held by the worker service
	h.clock.Advance(10 * time.Second)
	h.settle()
	got := r.attempts()
	if len(got) != 1 || got[0].a.Worker.GetPool() != "batch" || h.exec.count.Load() != 0 {
		t.Fatalf("worker attempts %v, local executions %d; want one worker attempt, nothing run locally", got, h.exec.count.Load())
	}
	first := got[0].a

	got[0].done(first, dispatch.Outcome{Lost: true, Detail: "worker w1 missed its lease"})
	h.waitFor("the re-dispatch", func() bool { return len(r.attempts()) == 2 })
	h.settle()
	second := r.attempts()[1].a
	if second.RunID != first.RunID || second.Token <= first.Token || second.Number != 2 {
		t.Fatalf("re-dispatch %+v, want attempt 2 of run %s with a token above %d", second, first.RunID, first.Token)
	}
	run, _ := h.fsm.Run(first.RunID)
	if atts := run.GetAttempts(); atts[0].GetState() != pb.RunState_RUN_STATE_SUPERSEDED ||
		atts[1].GetKind() != pb.FireKind_FIRE_KIND_REDISPATCH {
		t.Fatalf("attempts %v, want the lost one superseded by a re-dispatch", atts)
	}

	// The lost worker reports after all: committed, and superseded.
	var proposed sync.Map
	h.prop.setHook(func(cmd *pb.Command) (error, bool) {
		for _, c := range cmd.GetCompleteBatch().GetCompletions() {
			proposed.Store(c.GetToken(), true)
		}
		return nil, false
	})
	got[0].done(first, succeeded(h))
	h.settle()
	if _, ok := proposed.Load(first.Token); !ok {
		t.Fatal("the late outcome was not proposed for the state machine to judge")
	}
	if run, _ := h.fsm.Run(first.RunID); run.GetState() != pb.RunState_RUN_STATE_DISPATCHED {
		t.Fatalf("run after the late outcome: %v, want still DISPATCHED under the new token", run.GetState())
	}
	r.attempts()[1].done(second, succeeded(h))
	h.waiting = 0
	h.settle()
	if run, _ := h.fsm.Run(first.RunID); run.GetState() != pb.RunState_RUN_STATE_SUCCEEDED {
		t.Fatalf("run %v, want SUCCEEDED by the re-dispatched attempt", run.GetState())
	}
	if v := metricValue(t, h.s.metrics.runs.WithLabelValues(outcomeLost)); v != 1 {
		t.Fatalf("raftcron_runs_total{outcome=lost} = %v, want 1", v)
	}
}

func TestLostWorkerAttemptAtMostOnceIsUnknown(t *testing.T) {
	r := &fakeRemote{}
	h := newHarness(t, withRemote(r))
	s := workerJob("render")
	s.Delivery = pb.Delivery_DELIVERY_AT_MOST_ONCE
	h.putJob(s)
	h.lead()
	h.waiting = 1 // held by the worker service
	h.clock.Advance(10 * time.Second)
	h.settle()
	first := r.attempts()[0]
	h.waiting = 0
	first.done(first.a, dispatch.Outcome{Lost: true, Detail: "stream broke"})
	h.waitFor("the run to be given up", func() bool {
		run, _ := h.fsm.Run(first.a.RunID)
		return run.GetState() == pb.RunState_RUN_STATE_UNKNOWN
	})
	h.settle()
	run, _ := h.fsm.Run(first.a.RunID)
	if run.GetReason() != fsm.ReasonWorkerLost || len(r.attempts()) != 1 {
		t.Fatalf("run %v with %d worker attempts, want UNKNOWN (worker_lost) and no second attempt", run, len(r.attempts()))
	}
}

// stateAt reports a cluster version the test sets, over a real FSM.
type stateAt struct {
	State
	version *atomic.Uint32
}

func (s stateAt) ClusterVersion() uint32 { return s.version.Load() }

func atClusterVersion(v *atomic.Uint32) harnessOpt {
	return func(c *Config) { c.State = stateAt{c.State, v} }
}

// Below the cluster version that re-dispatches a lost attempt by its token
// (an older voter may lead, which would refuse it), the re-dispatch waits,
// unproposed; it goes out once the cluster runs that version.
func TestLostWorkerAttemptWaitsForTheClusterVersion(t *testing.T) {
	var version atomic.Uint32
	version.Store(1)
	r := &fakeRemote{}
	h := newHarness(t, withRemote(r), atClusterVersion(&version))
	h.putJob(workerJob("render"))
	h.lead()
	h.waiting = 1 // held by the worker service
	h.clock.Advance(10 * time.Second)
	h.settle()
	first := r.attempts()[0]
	var proposed atomic.Int64
	h.prop.setHook(func(cmd *pb.Command) (error, bool) {
		for _, f := range cmd.GetFireBatch().GetFires() {
			if f.GetLostToken() != 0 {
				proposed.Add(1)
			}
		}
		return nil, false
	})
	h.waiting = 0
	first.done(first.a, dispatch.Outcome{Lost: true, Detail: "worker w1 missed its lease"})
	h.step(3 * time.Second)
	if n := proposed.Load(); n != 0 || len(r.attempts()) != 1 {
		t.Fatalf("at cluster version 1: %d re-dispatches proposed, %d worker attempts; want none proposed", n, len(r.attempts()))
	}
	version.Store(fsm.WorkersVersion)
	h.waiting = 1 // the re-dispatch, held by the worker service
	h.step(time.Second)
	h.waitFor("the re-dispatch", func() bool { return len(r.attempts()) == 2 })
	if second := r.attempts()[1].a; second.RunID != first.a.RunID || second.Token <= first.a.Token {
		t.Fatalf("re-dispatch %+v, want run %s under a token above %d", second, first.a.RunID, first.a.Token)
	}
}

// A lost attempt of a run whose job moved to another generation while it
// ran is given up as an orphan of that generation is: it may have run, and
// the new target is another job's.
func TestLostWorkerAttemptOfAnEarlierGenerationIsUnknown(t *testing.T) {
	r := &fakeRemote{}
	h := newHarness(t, withRemote(r))
	h.putJob(workerJob("render"))
	h.lead()
	h.waiting = 1 // held by the worker service
	h.clock.Advance(10 * time.Second)
	h.settle()
	first := r.attempts()[0]
	moved := workerJob("render")
	moved.Worker.Pool = "other"
	h.putJob(moved)
	h.waiting = 0
	first.done(first.a, dispatch.Outcome{Lost: true, Detail: "worker w1 missed its lease"})
	h.waitFor("the lost attempt to be resolved", func() bool {
		run, _ := h.fsm.Run(first.a.RunID)
		return run.GetState() != pb.RunState_RUN_STATE_DISPATCHED
	})
	h.settle()
	run, _ := h.fsm.Run(first.a.RunID)
	if run.GetState() != pb.RunState_RUN_STATE_UNKNOWN || run.GetReason() != fsm.ReasonGeneration || len(r.attempts()) != 1 {
		t.Fatalf("run %v with %d worker attempts, want UNKNOWN (generation) and no second attempt", run, len(r.attempts()))
	}
}

// A node without a worker service fails worker attempts at once rather
// than holding them.
func TestWorkerAttemptWithoutWorkerServiceFails(t *testing.T) {
	h := newHarness(t)
	h.putJob(workerJob("render"))
	h.lead()
	h.step(10 * time.Second)
	runs := h.runs("render")
	if len(runs) != 1 || runs[0].GetState() != pb.RunState_RUN_STATE_FAILED ||
		!strings.Contains(fsm.CurrentAttempt(runs[0]).GetDetail(), "no worker service") {
		t.Fatalf("runs %v, want one FAILED for want of a worker service", runs)
	}
}

func TestWorkerWaitIsCatchupWindowOrDeadline(t *testing.T) {
	slot := t0
	now := t0.Add(20 * time.Second)
	s := workerJob("render")
	s.Catchup = &pb.Catchup{Window: durationpb.New(time.Minute)}
	for _, tc := range []struct {
		name     string
		kind     pb.FireKind
		deadline time.Duration
		want     time.Time
	}{
		{"scheduled: the slot's window", pb.FireKind_FIRE_KIND_SCHEDULED, time.Hour, slot.Add(time.Minute)},
		{"catch-up: the slot's window", pb.FireKind_FIRE_KIND_CATCHUP, 0, slot.Add(time.Minute)},
		{"manual: the deadline", pb.FireKind_FIRE_KIND_MANUAL, 5 * time.Minute, now.Add(5 * time.Minute)},
		{"retry without deadline: the window", pb.FireKind_FIRE_KIND_RETRY, 0, now.Add(time.Minute)},
	} {
		s.Deadline = nil
		if tc.deadline > 0 {
			s.Deadline = durationpb.New(tc.deadline)
		}
		if got := workerWait(s, tc.kind, slot, now); !got.Equal(tc.want) {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// While a lost attempt's re-dispatch cannot commit (a voter is down and
// its command version unknown), it waits and is tried again; the fires of
// every other job go on meanwhile, and those of its own job wait for it,
// even when its runs may overlap.
func TestLostReDispatchThatCannotCommitHoldsUpNothingElse(t *testing.T) {
	r := &fakeRemote{}
	h := newHarness(t, withRemote(r))
	render := workerJob("render")
	render.Overlap = pb.Overlap_OVERLAP_ALLOW
	h.putJob(render)
	h.putJob(spec("ping", "@every 1s"))
	h.lead()
	h.waiting = 1
	h.clock.Advance(10 * time.Second)
	h.settle()
	first := r.attempts()[0]
	before := len(h.exec.startedOf("ping"))

	var refused atomic.Int64
	h.prop.setHook(func(cmd *pb.Command) (error, bool) {
		for _, f := range cmd.GetFireBatch().GetFires() {
			if f.GetLostToken() != 0 {
				refused.Add(1)
				return errInjected, false
			}
		}
		return nil, false
	})
	first.done(first.a, dispatch.Outcome{Lost: true, Detail: "worker w1 missed its lease"})
	h.waitFor("the re-dispatch to be refused", func() bool { return refused.Load() > 0 })
	h.waiting = 0
	h.step(12 * time.Second) // render's next slot comes due meanwhile
	if got := len(h.exec.startedOf("ping")) - before; got != 12 {
		t.Fatalf("ping ran %d times in 12 s while the re-dispatch was refused, want 12", got)
	}
	if len(r.attempts()) != 1 || refused.Load() < 2 {
		t.Fatalf("%d worker attempts, %d refusals: want the re-dispatch tried again, and render's new slot held", len(r.attempts()), refused.Load())
	}
	h.prop.setHook(nil)
	h.waiting = 1
	h.step(time.Second)
	got := r.attempts()
	if len(got) != 2 || got[1].a.RunID != first.a.RunID || got[1].a.Token <= first.a.Token {
		t.Fatalf("worker attempts %v, want the re-dispatch, and the held slot still waiting for its outcome", got)
	}
	got[1].done(got[1].a, succeeded(h))
	h.waitFor("the held slot", func() bool { return len(r.attempts()) == 3 })
	if held := r.attempts()[2].a; held.ScheduledAt.Unix() != first.a.ScheduledAt.Unix()+10 {
		t.Fatalf("after the re-dispatch: %+v, want the slot that came due meanwhile", held)
	}
}

// A committed run cancel reaches an attempt on a remote worker through the
// attempt's context, which the worker service turns into a cancel sent to
// the worker.
func TestCancelRunCancelsTheWorkerAttempt(t *testing.T) {
	r := &fakeRemote{}
	h := newHarness(t, withRemote(r))
	h.putJob(workerJob("render"))
	h.lead()
	h.waiting = 1
	h.clock.Advance(10 * time.Second)
	h.settle()
	got := r.attempts()[0]
	h.apply(cancelCommand(got.a.RunID))
	select {
	case <-got.ctx.Done():
		if cause := context.Cause(got.ctx); !errors.Is(cause, errRunCancelled) {
			t.Fatalf("the attempt's context ended with %v, want %v", cause, errRunCancelled)
		}
	case <-time.After(promptly):
		t.Fatal("the worker attempt's context was not cancelled")
	}
}

// While offers are on their way to a worker, unacknowledged, the outcomes
// of those that came back wait (up to the hold): their entry would carry
// the wave's commits to the followers, whose applies would then take CPU
// from the offers still travelling.
func TestOutcomesWaitForUnacknowledgedOffers(t *testing.T) {
	r := &fakeRemote{}
	h := newHarness(t, withRemote(r))
	var committed atomic.Int64
	h.prop.after = func(cmd *pb.Command, _ *pb.CommandResult) {
		if cmd.GetCompleteBatch() != nil {
			committed.CompareAndSwap(0, time.Now().UnixNano())
		}
	}
	h.putJob(workerJob("render"))
	h.lead()
	h.waiting = 1 // held by the worker service
	h.clock.Advance(10 * time.Second)
	h.settle()
	r.unacked.Store(1) // another worker's offer, not yet acknowledged
	start := time.Now()
	got := r.attempts()[0]
	h.waiting = 0
	got.done(got.a, succeeded(h))
	h.waitFor("the outcome to commit", func() bool { return committed.Load() != 0 })
	if held := time.Unix(0, committed.Load()).Sub(start); held < maxCompletionHold {
		t.Fatalf("the outcome committed %v after it came back while an offer was unacknowledged; want it held %v", held, maxCompletionHold)
	}
}

// Remote workers' progress reaches the run's attempt through the log,
// gathered into one entry a second, and only the latest report of each
// attempt.
func TestProgressIsCommittedInBatches(t *testing.T) {
	r := &fakeRemote{}
	p := NewProgress()
	h := newHarness(t, withRemote(r), func(c *Config) { c.Progress = p })
	h.putJob(workerJob("render"))
	h.lead()
	h.waiting = 1 // held by the worker service
	h.clock.Advance(10 * time.Second)
	h.settle()
	a := r.attempts()[0].a

	var entries atomic.Int64
	h.prop.setHook(func(cmd *pb.Command) (error, bool) {
		if cmd.GetRecordProgress() != nil {
			entries.Add(1)
		}
		return nil, false
	})
	for i := range uint32(5) {
		pct := 20 * (i + 1)
		p.Report(&pb.ProgressRecord{RunId: a.RunID, Token: a.Token, Progress: &pct, Message: "step", AtUnixNano: int64(i)})
	}
	h.waitFor("the progress to be committed", func() bool {
		run, _ := h.fsm.Run(a.RunID)
		return fsm.CurrentAttempt(run).GetProgress() == 100
	})
	if n := entries.Load(); n != 1 {
		t.Fatalf("%d record_progress entries for five reports, want one", n)
	}
}
