package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fence"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/worker"
)

// A node serves remote workers as `raftcron serve` does: a worker pointed
// at a follower follows it to the leader and runs a worker job's attempt,
// offered with the v2 signature the node's fence keys make, and the worker
// service's metrics are on the ops port.
func TestServersServeRemoteWorkers(t *testing.T) {
	keys, err := fence.NewKeys([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	servers := startCluster(t, 3, func(c *Config) { c.Policy.FenceKeys = keys })
	leader, followers := leaderOf(t, servers)
	// Worker targets are registered once the leader raised the cluster
	// version, as it does right after its election (the follower that
	// takes the job need not have applied the raise yet); from that
	// version on the leader signs v2.
	testutil.WaitFor(t, 10*time.Second, "the cluster version that applies workers and signs v2", func() bool {
		return leader.FSM().ClusterVersion() >= max(fsm.WorkersVersion, fsm.SignaturesV2Version)
	})

	ran := make(chan worker.Run, 1)
	startGoWorker(t, followers[0].Addr(), func(_ context.Context, r worker.Run) error { ran <- r; return nil })

	conn := dialPlain(t, followers[1].Addr())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	jobs := pb.NewJobServiceClient(conn)
	spec := &pb.JobSpec{Name: "charge", Schedule: "@yearly",
		Worker: &pb.WorkerTarget{Pool: "batch", Handler: "charge", Payload: "full"}}
	if _, err := jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: spec}); err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	if _, err := jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "charge"}); err != nil {
		t.Fatalf("TriggerJob: %v", err)
	}
	select {
	case r := <-ran:
		if r.Payload != "full" || r.Worker != "w1" {
			t.Errorf("run %+v, want the job's payload on w1", r)
		}
		if err := fence.NewVerifier(keys).Verify(r.Dispatch(), r.Signature); err != nil {
			t.Errorf("the offer's signature %q: %v, want v2 over the run and its payload", r.Signature, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the worker never ran the triggered attempt")
	}

	resp, err := http.Get("http://" + leader.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "raftcron_worker_attempts_offered_total 1") {
		t.Errorf("/metrics of the leader has no offered worker attempt:\n%s", grepLines(string(body), "raftcron_worker"))
	}
}

// startGoWorker runs a Go worker w1 of pool batch with handler charge
// against addr until the test ends.
func startGoWorker(t *testing.T, addr string, charge worker.HandlerFunc) {
	t.Helper()
	w, err := worker.New(worker.Config{ID: "w1", Pool: "batch", Addrs: []string{addr},
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Handle("charge", charge); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		<-stopped
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A worker lease too short for heartbeats to keep it is refused, naming
// the field; zero takes the default.
func TestValidateRefusesAShortWorkerLease(t *testing.T) {
	cfg := Config{ID: "n1", DataDir: t.TempDir(), Addr: "127.0.0.1:7001", HTTPAddr: "127.0.0.1:0", WorkerLease: 10 * time.Millisecond}
	var ce *cluster.ConfigError
	if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != FieldWorkerLease || !strings.Contains(ce.Rule, "must be at least 100ms") {
		t.Fatalf("Validate with a 10ms lease: %v, want a ConfigError of %s", err, FieldWorkerLease)
	}
	cfg.WorkerLease = 0
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate with the default lease: %v", err)
	}
}

// A Go worker's progress reaches `run get` on every node, and cancelling
// the run ends its handler's context with the cause.
func TestGoWorkerProgressAndCancel(t *testing.T) {
	servers := startCluster(t, 3)
	_, followers := leaderOf(t, servers)
	testutil.WaitFor(t, 10*time.Second, "the cluster version that records progress", func() bool {
		return followers[1].FSM().ClusterVersion() >= fsm.ProgressVersion
	})
	cause := make(chan error, 1)
	startGoWorker(t, followers[0].Addr(), func(ctx context.Context, r worker.Run) error {
		r.Progress(40, "charged 400 of 1000 cards")
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	})

	conn := dialPlain(t, followers[1].Addr())
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	spec := &pb.JobSpec{Name: "charge", Schedule: "@yearly", Worker: &pb.WorkerTarget{Pool: "batch", Handler: "charge"}}
	if _, err := pb.NewJobServiceClient(conn).CreateJob(ctx, &pb.CreateJobRequest{Spec: spec}); err != nil {
		t.Fatal(err)
	}
	trig, err := pb.NewJobServiceClient(conn).TriggerJob(ctx, &pb.TriggerJobRequest{Name: "charge"})
	if err != nil {
		t.Fatal(err)
	}
	id := trig.GetRun().GetId()
	runs := pb.NewRunServiceClient(conn)
	testutil.WaitFor(t, 10*time.Second, "the worker's progress in run get", func() bool {
		resp, err := runs.GetRun(ctx, &pb.GetRunRequest{Id: id})
		a := fsm.CurrentAttempt(resp.GetRun())
		return err == nil && a.GetProgress() == 40 && a.GetProgressMessage() == "charged 400 of 1000 cards"
	})
	if _, err := runs.CancelRun(ctx, &pb.CancelRunRequest{Id: id}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cause:
		if err == nil || !strings.Contains(err.Error(), "cancel") {
			t.Fatalf("the handler's context ended with %v, want the run's cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context was not cancelled with the run")
	}
}
