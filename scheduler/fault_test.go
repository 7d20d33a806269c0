package scheduler

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/scheduler/dispatch"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// closedURL is an address nothing listens on: connections are refused.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/run"
}

// fakeTimes stamps a real executor's outcomes with the fake clock, as the
// FSM computes retry backoff from them.
type fakeTimes struct {
	ex    dispatch.Executor
	clock Clock
}

func (f fakeTimes) Execute(ctx context.Context, a dispatch.Attempt) dispatch.Outcome {
	o := f.ex.Execute(ctx, a)
	o.StartedAt, o.FinishedAt = f.clock.Now(), f.clock.Now()
	return o
}

// An unreachable target fails its run with the reason, is retried per
// policy, and delays nothing else.
func TestUnreachableTarget(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	defer srv.Close()
	h := newHarness(t, func(c *Config) {
		c.Executor = fakeTimes{dispatch.NewRouter(dispatch.NewHTTPExecutor(srv.Client()), nil), c.Clock}
	})
	down := spec("down", "@every 10s")
	down.Http.Url = closedURL(t)
	down.Retry = &pb.Retry{MaxAttempts: 2, InitialBackoff: durationpb.New(time.Second)}
	h.putJob(down)
	up := spec("up", "@every 10s")
	up.Http.Url = srv.URL
	h.putJob(up)
	h.lead()
	h.step(10 * time.Second)
	if runs := h.runsIn("up", pb.RunState_RUN_STATE_SUCCEEDED); len(runs) != 1 {
		t.Fatalf("up: %d succeeded runs at its slot, want 1", len(runs))
	}
	h.step(2 * time.Second)
	runs := h.runs("down")
	if len(runs) != 1 || runs[0].GetState() != pb.RunState_RUN_STATE_FAILED || len(runs[0].GetAttempts()) != 2 {
		t.Fatalf("down: runs %v, want one FAILED after 2 attempts", runs)
	}
	for _, a := range runs[0].GetAttempts() {
		if a.GetState() != pb.RunState_RUN_STATE_FAILED || !strings.Contains(a.GetDetail(), "refused") {
			t.Fatalf("attempt %d: %s %q, want FAILED naming the refused connection", a.GetNumber(), a.GetState(), a.GetDetail())
		}
	}
	h.step(8 * time.Second)
	if n := hits.Load(); n != 2 {
		t.Fatalf("up was delivered %d times by slot 20, want 2", n)
	}
	if n := metricValue(t, h.s.metrics.lateness); n != 4 {
		t.Fatalf("lateness samples = %v, want 4 (first attempts only)", n)
	}
}

// A job deleted while its attempt runs: the attempt is cancelled and
// recorded, and no new slot fires.
func TestJobDeletedWhileRunning(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.exec.gate("job")
	h.lead()
	h.step(10 * time.Second)
	started := h.exec.startedOf("job")
	if len(started) != 1 {
		t.Fatalf("%d started, want 1", len(started))
	}
	h.deleteJob("job")
	h.settle()
	fin := h.exec.finishedOf("job")
	if len(fin) != 1 || !errors.Is(fin[0].cancelCaus, errJobDeleted) {
		t.Fatalf("finished %+v, want the attempt cancelled because the job was deleted", fin)
	}
	r, err := h.fsm.Run(started[0].RunID)
	if err != nil {
		t.Fatal(err)
	}
	if r.GetState() != pb.RunState_RUN_STATE_CANCELLED || !strings.Contains(r.GetAttempts()[0].GetDetail(), "job deleted") {
		t.Fatalf("run %s %q, want CANCELLED with the reason recorded", r.GetState(), r.GetAttempts()[0].GetDetail())
	}
	h.step(30 * time.Second)
	if n := len(h.exec.startedOf("job")); n != 1 {
		t.Fatalf("%d attempts after the delete, want none new", n-1)
	}
	if n := len(h.prop.fireBatches()); n != 1 {
		t.Fatalf("%d fire batches, want 1: nothing is planned for a deleted job", n)
	}
}

// A job updated while running gets a new generation; no slot fires twice
// across the change, and the old attempt finishes and is recorded.
func TestJobUpdatedWhileRunning(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_ALLOW))
	h.exec.gate("job")
	h.lead()
	h.step(12 * time.Second)
	upd := withOverlap(pb.Overlap_OVERLAP_ALLOW)
	upd.Schedule = "@every 5s"
	if j := h.putJob(upd); j.GetGeneration() != 2 {
		t.Fatalf("generation %d after a schedule change, want 2", j.GetGeneration())
	}
	h.step(18 * time.Second)
	h.release("job")
	seen := map[int64]bool{}
	var gens []uint64
	for _, r := range h.runs("job") {
		if r.GetState() == pb.RunState_RUN_STATE_MISSED {
			t.Fatalf("unexpected missed run %v", r)
		}
		if seen[r.GetSlotUnix()] {
			t.Fatalf("slot %d fired twice", r.GetSlotUnix()-t0.Unix())
		}
		seen[r.GetSlotUnix()] = true
		gens = append(gens, r.GetGeneration())
		if r.GetState() != pb.RunState_RUN_STATE_SUCCEEDED {
			t.Fatalf("run %s is %s, want SUCCEEDED", r.GetId(), r.GetState())
		}
	}
	if got := h.startedSlots("job"); !slices.Equal(slices.Sorted(slices.Values(got)), []int64{10, 15, 20, 25, 30}) {
		t.Fatalf("slots = %v, want 10 (generation 1) then 15..30 every 5s", got)
	}
	if !slices.Equal(gens, []uint64{1, 2, 2, 2, 2}) {
		t.Fatalf("generations = %v, want [1 2 2 2 2]", gens)
	}
}

func TestTrigger(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.s.Trigger(ctx, &pb.Fire{Job: "job", RequestId: "r1"}); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("Trigger on a follower: %v, want ErrNotLeader", err)
	}
	h.lead()
	res, err := h.s.Trigger(ctx, &pb.Fire{Job: "job", RequestId: "r1"})
	if err != nil || !res.GetAccepted() || res.GetRun().GetKind() != pb.FireKind_FIRE_KIND_MANUAL {
		t.Fatalf("Trigger = %v, %v; want an accepted manual run", res, err)
	}
	h.settle()
	again, err := h.s.Trigger(ctx, &pb.Fire{Job: "job", RequestId: "r1"})
	if err != nil || again.GetAccepted() || again.GetReason() != "duplicate_request" || again.GetRunId() != res.GetRunId() {
		t.Fatalf("second Trigger = %v, %v; want the first run, duplicate_request", again, err)
	}
	h.settle()
	started := h.exec.startedOf("job")
	if len(started) != 1 || started[0].RunID != res.GetRunId() || started[0].Token != res.GetToken() {
		t.Fatalf("started %+v, want the manual run once", started)
	}
	if _, err := h.s.Trigger(ctx, &pb.Fire{Job: "nope"}); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("Trigger of an unknown job: %v, want ErrNotFound", err)
	}
}

func TestMetrics(t *testing.T) {
	h := newHarness(t)
	h.putJob(withOverlap(pb.Overlap_OVERLAP_SKIP))
	h.exec.gate("job")
	h.lead()
	h.step(20 * time.Second)
	if v := metricValue(t, h.s.metrics.inFlight); v != 1 {
		t.Fatalf("runs_in_flight = %v, want 1", v)
	}
	h.release("job")
	h.exec.setOutcome("job", pb.RunState_RUN_STATE_FAILED)
	h.step(10 * time.Second)
	for _, c := range []struct {
		what string
		got  float64
		want float64
	}{
		{"runs_total{succeeded}", metricValue(t, h.s.metrics.runs.WithLabelValues("succeeded")), 1},
		{"runs_total{failed}", metricValue(t, h.s.metrics.runs.WithLabelValues("failed")), 1},
		{"runs_missed_total{overlap_skipped}", metricValue(t, h.s.metrics.missed.WithLabelValues("overlap_skipped")), 1},
		{"fire_lateness_seconds count", metricValue(t, h.s.metrics.lateness), 2},
		{"runs_in_flight", metricValue(t, h.s.metrics.inFlight), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if n := len(h.s.Collectors()); n != 5 {
		t.Fatalf("%d collectors, want 5", n)
	}
}

// More attempts than workers and pool queue: the rest wait in the
// scheduler's own queue and all are delivered.
func TestPoolOverflowDeliversEverything(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Workers, c.Queue = 1, 1 })
	const jobs = 20
	for i := range jobs {
		s := spec(string(rune('a'+i)), "@every 10s")
		h.putJob(s)
	}
	h.lead()
	h.step(10 * time.Second)
	if n := len(h.exec.startedOf("")); n != jobs {
		t.Fatalf("%d delivered, want %d", n, jobs)
	}
}

// On leadership loss, attempts that never reached a worker are dropped
// without starting, and the running one is cancelled; every run stays open
// for the next leader.
func TestLeadershipLossDropsQueuedAttempts(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Workers, c.Queue = 1, 1 })
	names := []string{"a", "b", "c", "d", "e"}
	for _, n := range names {
		h.putJob(spec(n, "@every 10s"))
		h.exec.gate(n)
	}
	h.lead()
	h.waiting = len(names) - 1
	h.clock.Advance(10 * time.Second)
	h.settle()
	if n := h.s.InFlight(); n != len(names) {
		t.Fatalf("%d in flight, want %d (1 running, 4 waiting)", n, len(names))
	}
	h.s.SetLeader(false)
	h.waitFor("every attempt to be gone", func() bool { return h.s.InFlight() == 0 })
	if n := len(h.exec.startedOf("")); n != 1 {
		t.Fatalf("%d attempts started, want only the one that was running", n)
	}
	for _, n := range names {
		if open := h.runsIn(n, pb.RunState_RUN_STATE_DISPATCHED); len(open) != 1 {
			t.Fatalf("%s: %d open runs, want 1", n, len(open))
		}
	}
}

// The job's deadline travels with each attempt; an attempt ended by it is
// retried while attempts remain.
func TestDeadline(t *testing.T) {
	h := newHarness(t)
	s := spec("job", "@every 1h")
	s.Deadline = durationpb.New(30 * time.Second)
	s.Retry = &pb.Retry{MaxAttempts: 2, InitialBackoff: durationpb.New(time.Second)}
	h.putJob(s)
	h.exec.setOutcome("job", pb.RunState_RUN_STATE_DEADLINE_EXCEEDED)
	h.clock.Set(t0.Add(time.Hour - time.Second))
	h.lead()
	h.step(3 * time.Second)
	started := h.exec.startedOf("job")
	if len(started) != 2 {
		t.Fatalf("%d attempts, want 2", len(started))
	}
	for _, a := range started {
		if a.Deadline != 30*time.Second {
			t.Fatalf("attempt deadline %v, want 30s", a.Deadline)
		}
	}
	if r := h.runs("job"); len(r) != 1 || r[0].GetState() != pb.RunState_RUN_STATE_DEADLINE_EXCEEDED {
		t.Fatalf("runs %v, want one DEADLINE_EXCEEDED", r)
	}
}

// A target that hangs holds one worker and its own job, nothing else: the
// other job keeps firing at its slots.
func TestHangingTargetDelaysNothingElse(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Workers = 2 })
	h.putJob(spec("slow", "@every 10s"))
	h.putJob(spec("fast", "@every 10s"))
	h.exec.gate("slow")
	h.lead()
	h.step(30 * time.Second)
	fast := h.exec.startedOf("fast")
	if got := h.startedSlots("fast"); !slices.Equal(got, []int64{10, 20, 30}) {
		t.Fatalf("fast slots = %v, want [10 20 30]", got)
	}
	for _, a := range fast {
		r, err := h.fsm.Run(a.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if d := r.GetAttempts()[0].GetDispatchedAtUnixNano() - a.ScheduledAt.UnixNano(); d != 0 {
			t.Fatalf("fast slot %v committed %v late", a.ScheduledAt, time.Duration(d))
		}
	}
	if got := h.startedSlots("slow"); !slices.Equal(got, []int64{10}) {
		t.Fatalf("slow slots = %v, want [10] (20 and 30 skipped while it hangs)", got)
	}
}
