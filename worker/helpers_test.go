package worker_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/scheduler/remote"
	"github.com/raftcron/raftcron/worker"

	"github.com/raftcron/raftcron/proto/codec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// node is the worker side of a raftcron node: the hub behind the
// WorkerService, on loopback. The test submits attempts as the scheduler
// would and reads what became of them.
type node struct {
	t      testing.TB
	addr   string
	hub    *remote.Hub
	leader *leaderInfo
	got    *outcomes
	srv    *grpc.Server
}

type leaderInfo struct {
	mu       sync.Mutex
	leading  bool
	id, addr string
}

func (l *leaderInfo) IsLeader() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leading
}

func (l *leaderInfo) Leader() (string, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id, l.addr
}

func (l *leaderInfo) set(leading bool, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading, l.addr = leading, addr
}

func newNode(t testing.TB, lease time.Duration) *node {
	t.Helper()
	return newNodeWith(t, remote.Config{Lease: lease})
}

// newNodeWith is newNode with the hub's configuration (Leading is the
// node's).
func newNodeWith(t testing.TB, cfg remote.Config) *node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, addr: ln.Addr().String(), got: newOutcomes()}
	n.leader = &leaderInfo{leading: true, id: "n1", addr: n.addr}
	cfg.Leading = n.leader.IsLeader
	n.hub, err = remote.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The node's own codec (server.newGRPCServer), so that BenchmarkBurst
	// measures both ends as they run.
	n.srv = grpc.NewServer(grpc.ForceServerCodecV2(codec.Server))
	pb.RegisterWorkerServiceServer(n.srv, api.NewWorkerService(api.Deps{Workers: n.hub, Leader: n.leader}))
	go func() { _ = n.srv.Serve(ln) }()
	t.Cleanup(func() {
		n.hub.Close()
		n.srv.Stop()
	})
	return n
}

var tokens atomic.Uint64

// submit hands the hub a committed attempt of target and returns it.
func (n *node) submit(ctx context.Context, target *pb.WorkerTarget, deadline time.Duration) dispatch.Attempt {
	n.t.Helper()
	tok := tokens.Add(1)
	a := dispatch.Attempt{
		Job:         "billing",
		RunID:       fmt.Sprintf("billing-%d", tok),
		Token:       tok,
		Number:      1,
		ScheduledAt: time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC),
		Worker:      target,
		Deadline:    deadline,
		WaitUntil:   time.Now().Add(time.Minute),
	}
	if err := n.hub.Submit(ctx, a, n.got.done); err != nil {
		n.t.Fatal(err)
	}
	return a
}

// startWorker runs w until the test ends.
func startWorker(t testing.TB, cfg worker.Config, handlers map[string]worker.HandlerFunc) {
	t.Helper()
	if cfg.ID == "" {
		cfg.ID = "w1"
	}
	if cfg.Pool == "" {
		cfg.Pool = "batch"
	}
	if cfg.MinBackoff == 0 && cfg.MaxBackoff == 0 {
		cfg.MinBackoff, cfg.MaxBackoff = 20*time.Millisecond, 200*time.Millisecond
	}
	w, err := worker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range handlers {
		if err := w.Handle(name, h); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

type outcomes struct {
	mu      sync.Mutex
	byToken map[uint64]dispatch.Outcome
	changed chan struct{}
}

func newOutcomes() *outcomes {
	return &outcomes{byToken: make(map[uint64]dispatch.Outcome), changed: make(chan struct{})}
}

func (o *outcomes) done(a dispatch.Attempt, out dispatch.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.byToken[a.Token] = out
	close(o.changed)
	o.changed = make(chan struct{})
}

// wait returns the outcome of a, waiting up to 10 s.
func (o *outcomes) wait(t *testing.T, a dispatch.Attempt) dispatch.Outcome {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		o.mu.Lock()
		out, ok := o.byToken[a.Token]
		ch := o.changed
		o.mu.Unlock()
		if ok {
			return out
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no outcome of %s (token %d) within 10s", a.RunID, a.Token)
		}
	}
}
