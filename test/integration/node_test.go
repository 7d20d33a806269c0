package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/scheduler"
	"github.com/raftcron/raftcron/scheduler/dispatch"
)

// Raft timings: short for quick failovers, yet stable under -race on two
// busy cores (below ~200 ms elections flap there).
const (
	heartbeat = 300 * time.Millisecond
	election  = 300 * time.Millisecond
	lease     = 200 * time.Millisecond
)

func testLogger() *slog.Logger {
	if os.Getenv("RAFTCRON_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// gain is one node becoming leader, as its cluster.Node reported it.
type gain struct {
	id string
	at time.Time
}

// gains records every leadership gain of the cluster's nodes, for the
// report.
type gains struct {
	mu  sync.Mutex // guards log
	log []gain
}

func (g *gains) add(id string) {
	g.mu.Lock()
	g.log = append(g.log, gain{id, time.Now()})
	g.mu.Unlock()
}

// between counts the gains in [from, to).
func (g *gains) between(from, to time.Time) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, e := range g.log {
		if !e.at.Before(from) && e.at.Before(to) {
			n++
		}
	}
	return n
}

// node is one raftcron node, wired as `raftcron serve` wires it, minus the
// public gRPC API and the ops port: FSM, cluster node with the leadership
// relay, scheduler over the node with the http and exec executors, the FSM
// observer, and the internal service for forwarding. Its data dir and
// address survive restarts.
type node struct {
	t     *testing.T
	id    string
	addr  string
	dir   string
	peers []cluster.Peer
	gains *gains

	// The running incarnation; nil fields when stopped.
	mux   *cluster.Mux
	iso   *cluster.Isolation
	fsm   *fsm.FSM
	raft  *cluster.Node
	sched *scheduler.Scheduler
	grpc  *grpc.Server
	exec  *holdingExecutor
}

func (n *node) running() bool { return n.raft != nil }

// start opens the node on its address and data dir: a fresh dir
// bootstraps with the peers, an existing one restarts from its state.
// fsync stays on (cluster.Config.NoSync false), as in production.
func (n *node) start(mux *cluster.Mux) {
	n.t.Helper()
	if mux == nil {
		var err error
		if mux, err = cluster.Listen(n.addr); err != nil {
			n.t.Fatalf("restart %s: %v", n.id, err)
		}
	}
	iso := cluster.NewIsolation()
	mux.SetIsolation(iso)
	log := testLogger().With("node", n.id)
	state := fsm.New()
	relay := &leaderRelay{onGain: func() { n.gains.add(n.id) }}
	rn, err := cluster.New(cluster.Config{
		ID:                 n.id,
		Addr:               n.addr,
		DataDir:            n.dir,
		Peers:              n.peers,
		HeartbeatTimeout:   heartbeat,
		ElectionTimeout:    election,
		LeaderLeaseTimeout: lease,
		FSM:                state,
		Logger:             log,
		OnLeadershipChange: relay.set,
	}, mux)
	if err != nil {
		mux.Close()
		n.t.Fatalf("start %s: %v", n.id, err)
	}
	exec := newHoldingExecutor(dispatch.NewRouter(dispatch.NewHTTPExecutor(nil), dispatch.NewExecExecutor(dispatch.ExecConfig{})))
	sched, err := scheduler.New(scheduler.Config{
		State:    state,
		Proposer: scheduler.NewNodeProposer(rn),
		Executor: exec,
		Logger:   log,
		NodeID:   n.id,
	})
	if err != nil {
		_ = rn.Shutdown(context.Background())
		mux.Close()
		n.t.Fatalf("scheduler of %s: %v", n.id, err)
	}
	state.SetObserver(sched)
	relay.attach(sched)
	gs := grpc.NewServer()
	cluster.RegisterInternal(gs, rn)
	go func() { _ = gs.Serve(mux.GRPCListener()) }()
	n.mux, n.iso, n.fsm, n.raft, n.sched, n.grpc, n.exec = mux, iso, state, rn, sched, gs, exec
}

// stop is the graceful stop of `raftcron serve`: leadership handed over,
// scheduler stopped (in-flight attempts cancelled), Raft shut down, port
// closed.
func (n *node) stop() {
	n.t.Helper()
	if !n.running() {
		return
	}
	if n.raft.IsLeader() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := n.raft.TransferLeadership(ctx, ""); err != nil {
			n.t.Logf("%s: leadership transfer before stop failed: %v", n.id, err)
		}
		cancel()
	}
	n.halt(10 * time.Second)
}

// crash stops the node as a killed process would: it drops off the
// network at once, hands nothing over, and its attempts stop where they
// are.
func (n *node) crash() {
	n.t.Helper()
	if !n.running() {
		return
	}
	n.iso.Cut()
	n.halt(2 * time.Second)
}

func (n *node) halt(raftWait time.Duration) {
	n.t.Helper()
	n.exec.releaseAll()
	n.sched.Stop()
	n.grpc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), raftWait)
	defer cancel()
	if err := n.raft.Shutdown(ctx); err != nil {
		n.t.Logf("%s: raft shutdown: %v", n.id, err)
	}
	n.mux.Close()
	n.mux, n.iso, n.fsm, n.raft, n.sched, n.grpc, n.exec = nil, nil, nil, nil, nil, nil, nil
}

// leaderRelay is serve.go's: it hands leadership changes to the scheduler,
// which exists only after the node, and reports gains.
type leaderRelay struct {
	onGain func()

	mu     sync.Mutex // orders set and attach
	sched  *scheduler.Scheduler
	leader bool
}

func (r *leaderRelay) set(isLeader bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if isLeader && !r.leader {
		r.onGain()
	}
	r.leader = isLeader
	if r.sched != nil {
		r.sched.SetLeader(isLeader)
	}
}

func (r *leaderRelay) attach(s *scheduler.Scheduler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sched = s
	s.SetLeader(r.leader)
}

// testCluster is three nodes n1..n3 on loopback.
type testCluster struct {
	t     *testing.T
	nodes []*node
	gains *gains
}

func newCluster(t *testing.T, size int) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, gains: &gains{}}
	muxes := make([]*cluster.Mux, size)
	peers := make([]cluster.Peer, size)
	for i := range muxes {
		m, err := cluster.Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		muxes[i] = m
		peers[i] = cluster.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: m.Addr().String()}
	}
	for i, p := range peers {
		n := &node{t: t, id: p.ID, addr: p.Addr, dir: t.TempDir(), peers: peers, gains: tc.gains}
		n.start(muxes[i])
		tc.nodes = append(tc.nodes, n)
	}
	t.Cleanup(func() {
		for _, n := range tc.nodes {
			if n.running() {
				n.halt(5 * time.Second)
			}
		}
	})
	return tc
}

// connected are the running nodes that are not cut off.
func (tc *testCluster) connected() []*node {
	var out []*node
	for _, n := range tc.nodes {
		if n.running() && !n.iso.IsCut() {
			out = append(out, n)
		}
	}
	return out
}

// waitLeader waits until exactly one connected node leads, every connected
// node names it, and there are at least want connected nodes.
func (tc *testCluster) waitLeader(want int, timeout time.Duration) *node {
	tc.t.Helper()
	var leader *node
	waitFor(tc.t, timeout, fmt.Sprintf("a leader that %d connected nodes agree on", want), func() bool {
		leader = nil
		nodes := tc.connected()
		if len(nodes) < want {
			return false
		}
		for _, n := range nodes {
			if n.raft.IsLeader() {
				if leader != nil {
					return false
				}
				leader = n
			}
		}
		if leader == nil {
			return false
		}
		for _, n := range nodes {
			if id, _ := n.raft.Leader(); id != leader.id || !n.raft.Ready() {
				return false
			}
		}
		return true
	})
	return leader
}

// waitFor polls cond every 20ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holdingExecutor delivers through the node's real executors, except for
// one attempt the test asks it to hold: it calls onHold with that attempt
// (the test cuts the node off there), waits for the test's release, then
// delivers it whatever became of its context. That models a request
// already on the wire when the node lost leadership: cancelling the
// attempt cannot call it back, and it reaches the downstream late.
type holdingExecutor struct {
	next dispatch.Executor

	// mu guards pending and holds.
	mu      sync.Mutex
	pending *hold
	holds   []*hold
}

// hold is one held attempt.
type hold struct {
	onHold   func(dispatch.Attempt)
	held     chan dispatch.Attempt // receives the attempt once held
	result   chan dispatch.Outcome // receives its outcome once delivered
	release  chan struct{}
	releaseO sync.Once
}

func (h *hold) let() { h.releaseO.Do(func() { close(h.release) }) }

func newHoldingExecutor(next dispatch.Executor) *holdingExecutor {
	return &holdingExecutor{next: next}
}

// holdNext holds the next attempt this executor gets.
func (e *holdingExecutor) holdNext(onHold func(dispatch.Attempt)) *hold {
	h := &hold{
		onHold:  onHold,
		held:    make(chan dispatch.Attempt, 1),
		result:  make(chan dispatch.Outcome, 1),
		release: make(chan struct{}),
	}
	e.mu.Lock()
	e.pending = h
	e.holds = append(e.holds, h)
	e.mu.Unlock()
	return h
}

// releaseAll lets every held attempt go, so that stopping never waits on
// one.
func (e *holdingExecutor) releaseAll() {
	e.mu.Lock()
	hs := e.holds
	e.pending = nil
	e.mu.Unlock()
	for _, h := range hs {
		h.let()
	}
}

func (e *holdingExecutor) Execute(ctx context.Context, a dispatch.Attempt) dispatch.Outcome {
	e.mu.Lock()
	h := e.pending
	e.pending = nil
	e.mu.Unlock()
	if h == nil {
		return e.next.Execute(ctx, a)
	}
	h.onHold(a)
	h.held <- a
	<-h.release
	o := e.next.Execute(context.WithoutCancel(ctx), a)
	h.result <- o
	return o
}
