package scheduler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/jobspec"
	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/scheduler/schedtest"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// t0 is a round start time: slots of @every specs fall on multiples of
// their period from it.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// fakeProposer is Raft reduced to one node: Apply marshals the command and
// applies it to a real FSM at the next index, so the scheduler speaks the
// real protocol.
type fakeProposer struct {
	f  *fsm.FSM
	id string

	mu    sync.Mutex // serialises Apply, as Raft's apply loop does
	index uint64
	term  atomic.Uint64
	// hook, if set, runs before each Apply: an error before commit means
	// nothing is committed; commitThenErr commits and still fails.
	hook func(cmd *pb.Command) (err error, commitThenErr bool)
	// after, if set, runs once an Apply has committed, before it returns:
	// the proposer learns of the commit only then, as over a slow network.
	after func(cmd *pb.Command, res *pb.CommandResult)
	// batches records every FireBatch committed.
	batches []*pb.FireBatchCommand
	barrier func() error
	// announced records the last committed index at each AnnounceCommit.
	announced []uint64
}

func newFakeProposer(f *fsm.FSM) *fakeProposer {
	p := &fakeProposer{f: f, id: "n1"}
	p.term.Store(2)
	return p
}

// committed is the index of the last entry committed.
func (p *fakeProposer) committed() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.index
}

func (p *fakeProposer) Apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	return p.Propose(ctx, cmd)()
}

// Propose commits cmd at once, at the next index, as Raft keeps a leader's
// entries in the order proposed; wait learns of the commit (after runs
// then).
func (p *fakeProposer) Propose(ctx context.Context, cmd *pb.Command) (wait func() (*pb.CommandResult, error)) {
	if err := ctx.Err(); err != nil {
		return failedWait(err)
	}
	data, err := proto.Marshal(cmd)
	if err != nil {
		return failedWait(err)
	}
	p.mu.Lock()
	hook := p.hook
	var after error
	if hook != nil {
		herr, commit := hook(cmd)
		if herr != nil && !commit {
			p.mu.Unlock()
			return failedWait(herr)
		}
		after = herr
	}
	p.index++
	res := p.f.Apply(&raft.Log{Index: p.index, Term: p.term.Load(), Data: data}).(*pb.CommandResult)
	if fb := cmd.GetFireBatch(); fb != nil {
		p.batches = append(p.batches, fb)
	}
	then := p.after
	p.mu.Unlock()
	return func() (*pb.CommandResult, error) {
		if then != nil {
			then(cmd, res)
		}
		if after != nil {
			return nil, after
		}
		return res, nil
	}
}

func failedWait(err error) func() (*pb.CommandResult, error) {
	return func() (*pb.CommandResult, error) { return nil, err }
}

// commitLocked commits cmd at the next index, from within a hook (which
// runs with mu held): another proposer's entry that lands just before the
// one being applied.
func (p *fakeProposer) commitLocked(cmd *pb.Command) *pb.CommandResult {
	data, err := proto.Marshal(cmd)
	if err != nil {
		panic(err)
	}
	p.index++
	return p.f.Apply(&raft.Log{Index: p.index, Term: p.term.Load(), Data: data}).(*pb.CommandResult)
}

func (p *fakeProposer) Barrier(context.Context) error {
	if p.barrier != nil {
		return p.barrier()
	}
	return nil
}

func (p *fakeProposer) AnnounceCommit(context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.announced = append(p.announced, p.index)
}

// announcements returns the indexes announced so far.
func (p *fakeProposer) announcements() []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.announced)
}

func (p *fakeProposer) Term() uint64 { return p.term.Load() }
func (p *fakeProposer) ID() string   { return p.id }

func (p *fakeProposer) setHook(h func(cmd *pb.Command) (error, bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = h
}

func (p *fakeProposer) fireBatches() []*pb.FireBatchCommand {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.batches)
}

// fakeExec records attempts. Jobs can be gated (Execute waits for the gate
// or cancellation) and given outcomes.
type fakeExec struct {
	clock *schedtest.Clock

	mu       sync.Mutex
	started  []dispatch.Attempt
	finished []execRecord
	running  map[string]int // per job
	maxPer   map[string]int // highest concurrency seen per job
	gates    map[string]chan struct{}
	blocked  map[string]int // executions waiting at a gate, per job
	outcomes map[string]pb.RunState
	reasons  map[string]string // a policy refusal's reason, per job
	cancels  map[uint64]error  // cause seen by cancelled attempts
	seq      int
	count    atomic.Int64 // attempts started
}

type execRecord struct {
	a          dispatch.Attempt
	state      pb.RunState
	startSeq   int
	finishSeq  int
	cancelCaus error
}

func newFakeExec(c *schedtest.Clock) *fakeExec {
	return &fakeExec{
		clock:    c,
		running:  map[string]int{},
		maxPer:   map[string]int{},
		gates:    map[string]chan struct{}{},
		outcomes: map[string]pb.RunState{},
		reasons:  map[string]string{},
		cancels:  map[uint64]error{},
		blocked:  map[string]int{},
	}
}

func (e *fakeExec) Execute(ctx context.Context, a dispatch.Attempt) dispatch.Outcome {
	e.mu.Lock()
	e.seq++
	start := e.seq
	e.started = append(e.started, a)
	e.count.Add(1)
	e.running[a.Job]++
	e.maxPer[a.Job] = max(e.maxPer[a.Job], e.running[a.Job])
	gate := e.gates[a.Job]
	state, ok := e.outcomes[a.Job]
	if !ok {
		state = pb.RunState_RUN_STATE_SUCCEEDED
	}
	reason := e.reasons[a.Job]
	e.mu.Unlock()
	out := dispatch.Outcome{StartedAt: e.clock.Now(), State: state, Detail: "fake", Reason: reason}
	if gate != nil {
		e.setBlocked(a.Job, +1)
		select {
		case <-gate:
		case <-ctx.Done():
			out.State = pb.RunState_RUN_STATE_CANCELLED
			out.Detail = "cancelled: " + context.Cause(ctx).Error()
		}
		e.setBlocked(a.Job, -1)
	}
	out.FinishedAt = e.clock.Now()
	e.mu.Lock()
	e.seq++
	e.running[a.Job]--
	rec := execRecord{a: a, state: out.State, startSeq: start, finishSeq: e.seq}
	if ctx.Err() != nil {
		rec.cancelCaus = context.Cause(ctx)
	}
	e.finished = append(e.finished, rec)
	e.mu.Unlock()
	return out
}

func (e *fakeExec) setBlocked(job string, d int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.blocked[job] += d
}

// blockedCount counts executions waiting at a gate, of job or of all ("").
func (e *fakeExec) blockedCount(job string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for j, b := range e.blocked {
		if job == "" || j == job {
			n += b
		}
	}
	return n
}

func (e *fakeExec) gate(job string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gates[job] = make(chan struct{})
}

func (e *fakeExec) open(job string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if g := e.gates[job]; g != nil {
		close(g)
		delete(e.gates, job)
	}
}

func (e *fakeExec) setOutcome(job string, s pb.RunState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.outcomes[job] = s
}

// setRefused makes every attempt of job fail as refused by the node's policy.
func (e *fakeExec) setRefused(job, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.outcomes[job] = pb.RunState_RUN_STATE_FAILED
	e.reasons[job] = reason
}

func (e *fakeExec) startedOf(job string) []dispatch.Attempt {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []dispatch.Attempt
	for _, a := range e.started {
		if job == "" || a.Job == job {
			out = append(out, a)
		}
	}
	return out
}

func (e *fakeExec) finishedOf(job string) []execRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []execRecord
	for _, r := range e.finished {
		if job == "" || r.a.Job == job {
			out = append(out, r)
		}
	}
	return out
}

func (e *fakeExec) maxConcurrent(job string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.maxPer[job]
}

// harness is a scheduler on fake time over a real FSM.
type harness struct {
	t     testing.TB
	clock *schedtest.Clock
	fsm   *fsm.FSM
	prop  *fakeProposer
	exec  *fakeExec
	s     *Scheduler
	// waiting is how many attempts settle expects to stay queued behind
	// gated ones (a pool too small to run them).
	waiting int
}

type harnessOpt func(*Config)

func newHarness(t testing.TB, opts ...harnessOpt) *harness {
	t.Helper()
	h := &harness{t: t, clock: schedtest.NewClock(t0), fsm: fsm.New()}
	h.prop = newFakeProposer(h.fsm)
	// The rules of this build, as a cluster of it applies them once its
	// first leader raised the cluster version.
	if _, err := h.prop.Apply(context.Background(), fsm.SetClusterVersion(fsm.CommandVersion)); err != nil {
		t.Fatal(err)
	}
	h.exec = newFakeExec(h.clock)
	cfg := Config{
		State:    h.fsm,
		Proposer: h.prop,
		Executor: h.exec,
		Workers:  8,
		Clock:    h.clock,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	h.fsm.SetObserver(s)
	t.Cleanup(func() {
		for job := range h.gatedJobs() {
			h.exec.open(job)
		}
		s.Stop()
	})
	return h
}

func (h *harness) gatedJobs() map[string]bool {
	h.exec.mu.Lock()
	defer h.exec.mu.Unlock()
	out := map[string]bool{}
	for j := range h.exec.gates {
		out[j] = true
	}
	return out
}

// spec is a job every few seconds; putJob fills in the rest as the api does.
func spec(name, sched string) *pb.JobSpec {
	return &pb.JobSpec{
		Name:     name,
		Schedule: sched,
		Timezone: "UTC",
		Http:     &pb.HttpTarget{Url: "http://127.0.0.1:1/" + name, Method: "POST"},
		Catchup:  &pb.Catchup{Window: durationpb.New(time.Minute), Policy: pb.CatchupPolicy_CATCHUP_POLICY_ALL},
		Overlap:  pb.Overlap_OVERLAP_SKIP,
		Delivery: pb.Delivery_DELIVERY_AT_LEAST_ONCE,
	}
}

// apply commits a registry command stamped with the fake clock.
func (h *harness) apply(cmd *pb.Command) *pb.CommandResult {
	h.t.Helper()
	cmd.ProposedAtUnixNano = h.clock.Now().UnixNano()
	res, err := h.prop.Apply(context.Background(), cmd)
	if err != nil {
		h.t.Fatal(err)
	}
	if res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		h.t.Fatalf("apply: %s %s", res.GetCode(), res.GetMessage())
	}
	return res
}

// putJob stores s as the api would: normalized, so with every default
// filled in (the scheduler keeps none of its own).
func (h *harness) putJob(s *pb.JobSpec) *pb.Job {
	h.t.Helper()
	s = proto.CloneOf(s)
	jobspec.Normalize(s)
	return h.apply(&pb.Command{Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{Spec: s, Mode: pb.PutMode_PUT_MODE_UPSERT}}}).GetJob()
}

func (h *harness) deleteJob(name string) {
	h.t.Helper()
	h.apply(&pb.Command{Kind: &pb.Command_DeleteJob{DeleteJob: &pb.DeleteJobCommand{Name: name}}})
}

func (h *harness) setPaused(name string, paused bool) {
	h.t.Helper()
	h.apply(&pb.Command{Kind: &pb.Command_SetPaused{SetPaused: &pb.SetPausedCommand{Name: name, Paused: paused}}})
}

// lead makes the scheduler leader and waits until its first ticks are done.
func (h *harness) lead() {
	h.t.Helper()
	h.s.SetLeader(true)
	h.settle()
}

// waitFor waits until cond holds, for at most 10 s.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	testutil.WaitFor(h.t, 10*time.Second, what, cond)
}

// settle waits until the loop has handled everything up to the clock's
// reading: every attempt finished (but those held at a gate), every
// outcome proposed, nothing dirty, and the loop asleep after a tick at the
// current time.
func (h *harness) settle() {
	h.t.Helper()
	h.waitFor("the loop to settle", func() bool {
		l := h.s.current()
		if l == nil {
			return false
		}
		now := h.clock.Now().UnixNano()
		committed := h.prop.committed()
		idle := l.idleAt.Load()
		if idle != 0 && idle != now {
			h.s.wakeLoop() // asleep since an earlier reading: tick again
			return false
		}
		if idle != now || h.s.hasDirty() || h.s.InFlight() != h.exec.blockedCount("")+h.waiting ||
			l.unsettled.Load() != 0 {
			return false
		}
		// The readings are one after the other: the loop may have woken
		// between them, taken the dirty jobs and committed fires it has
		// not handed over yet. It is asleep at the same reading again and
		// committed nothing meanwhile only if it changed nothing.
		return l.idleAt.Load() == now && h.prop.committed() == committed
	})
}

// release opens job's gate, waits for the held executions to leave it,
// and settles.
func (h *harness) release(job string) {
	h.t.Helper()
	h.exec.open(job)
	h.waitFor("gated executions of "+job+" to finish", func() bool { return h.exec.blockedCount(job) == 0 })
	h.settle()
}

// step advances the clock one second at a time, settling after each.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	for end := h.clock.Now().Add(d); h.clock.Now().Before(end); {
		h.clock.Advance(min(time.Second, end.Sub(h.clock.Now())))
		h.settle()
	}
}

// runs lists the job's runs, oldest slot first.
func (h *harness) runs(job string) []*pb.Run {
	runs := h.fsm.ListRuns(job, 0)
	slices.SortFunc(runs, func(a, b *pb.Run) int {
		if a.GetSlotUnix() != b.GetSlotUnix() {
			return int(a.GetSlotUnix() - b.GetSlotUnix())
		}
		return int(a.GetCreatedAtUnixNano() - b.GetCreatedAtUnixNano())
	})
	return runs
}

func (h *harness) runsIn(job string, state pb.RunState) []*pb.Run {
	var out []*pb.Run
	for _, r := range h.runs(job) {
		if r.GetState() == state {
			out = append(out, r)
		}
	}
	return out
}

// slots lists the slot times (seconds after t0) of attempts started for job.
func (h *harness) startedSlots(job string) []int64 {
	var out []int64
	for _, a := range h.exec.startedOf(job) {
		out = append(out, a.ScheduledAt.Unix()-t0.Unix())
	}
	return out
}

func status(h *harness, job string) *pb.JobStatus {
	h.t.Helper()
	st, err := h.fsm.JobStatus(job)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

var errInjected = errors.New("injected fault")

func timestampAt(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(t0.Add(d)) }

// metricValue reads a counter, gauge or the sample count of a histogram.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	switch {
	case d.Counter != nil:
		return d.GetCounter().GetValue()
	case d.Gauge != nil:
		return d.GetGauge().GetValue()
	case d.Histogram != nil:
		return float64(d.GetHistogram().GetSampleCount())
	}
	t.Fatalf("unsupported metric %v", &d)
	return 0
}
