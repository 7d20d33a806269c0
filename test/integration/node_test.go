package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/scheduler"
	"github.com/raftcron/raftcron/scheduler/dispatch"
	"github.com/raftcron/raftcron/server"
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

// node is one raftcron node, wired by package server exactly as `raftcron
// serve` wires it (public gRPC API, forwarding, scheduler with the http and
// exec executors, ops port), with the test hooks of server.Config: an
// Isolation to cut it off the network, an executor that can hold an
// attempt, and a report of its leadership gains. Its data dir and address
// survive restarts.
type node struct {
	t     *testing.T
	id    string
	addr  string
	dir   string
	peers []cluster.Peer
	gains *gains
	// acl is serve --acl: every call but health needs a token.
	acl bool
	// clock and now, if set, replace the scheduler's clock and the clock
	// that stamps commands (server.Config.Clock and Now).
	clock scheduler.Clock
	now   func() time.Time
	// join, if set, makes a fresh node join through these addresses
	// instead of bootstrapping with peers.
	join []string

	// The running incarnation; nil when stopped.
	srv  *server.Server
	iso  *cluster.Isolation
	exec *holdingExecutor
}

func (n *node) running() bool { return n.srv != nil }

// raft, fsm and sched are the running incarnation's parts.
func (n *node) raft() *cluster.Node         { return n.srv.Node() }
func (n *node) fsm() *fsm.FSM               { return n.srv.FSM() }
func (n *node) sched() *scheduler.Scheduler { return n.srv.Scheduler() }

// start opens the node on its address and data dir: a fresh dir
// bootstraps with the peers, an existing one restarts from its state. ln is
// the node's port bound beforehand, or nil to bind its address again.
// fsync stays on (server.Config.NoSync false), as in production.
func (n *node) start(ln net.Listener) {
	n.t.Helper()
	iso := cluster.NewIsolation()
	var exec *holdingExecutor
	srv, err := server.New(server.Config{
		ID:                 n.id,
		Addr:               n.addr,
		Listener:           ln,
		HTTPAddr:           "127.0.0.1:0",
		DataDir:            n.dir,
		Peers:              n.peers,
		Join:               n.join,
		Clock:              n.clock,
		Now:                n.now,
		HeartbeatTimeout:   heartbeat,
		ElectionTimeout:    election,
		LeaderLeaseTimeout: lease,
		ACL:                n.acl,
		Logger:             testLogger().With("node", n.id),
		Isolation:          iso,
		WrapExecutor: func(next dispatch.Executor) dispatch.Executor {
			exec = newHoldingExecutor(next)
			return exec
		},
		OnLeadershipChange: func(isLeader bool) {
			if isLeader {
				n.gains.add(n.id)
			}
		},
	})
	if err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		n.t.Fatalf("start %s: %v", n.id, err)
	}
	if err := srv.Start(context.Background()); err != nil {
		n.t.Fatalf("start %s: %v", n.id, err)
	}
	n.srv, n.iso, n.exec = srv, iso, exec
}

// stop is the graceful stop of `raftcron serve`: leadership handed over,
// scheduler stopped (in-flight attempts cancelled), gRPC drained, Raft
// shut down, ports closed.
func (n *node) stop() {
	n.t.Helper()
	n.halt(15 * time.Second)
}

// crash stops the node as a killed process would: it drops off the
// network at once, so it hands nothing over, and its attempts stop where
// they are.
func (n *node) crash() {
	n.t.Helper()
	if !n.running() {
		return
	}
	n.iso.Cut()
	n.halt(2 * time.Second)
}

// halt stops the running incarnation, the courtesies of the stop bounded
// by wait.
func (n *node) halt(wait time.Duration) {
	n.t.Helper()
	if !n.running() {
		return
	}
	n.exec.releaseAll()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := n.srv.Stop(ctx); err != nil {
		n.t.Logf("%s: stop: %v", n.id, err)
	}
	n.srv, n.iso, n.exec = nil, nil, nil
}

// testCluster is three nodes n1..n3 on loopback.
type testCluster struct {
	t     *testing.T
	nodes []*node
	gains *gains
}

// newCluster starts size nodes; each option adjusts every node before it
// starts.
func newCluster(t *testing.T, size int, options ...func(*node)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, gains: &gains{}}
	lns := make([]net.Listener, size)
	peers := make([]cluster.Peer, size)
	host := testutil.LoopbackHost() // a restart binds its port again
	for i := range lns {
		ln, err := net.Listen("tcp", host+":0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		peers[i] = cluster.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: ln.Addr().String()}
	}
	for i, p := range peers {
		n := &node{t: t, id: p.ID, addr: p.Addr, dir: t.TempDir(), peers: peers, gains: tc.gains}
		for _, o := range options {
			o(n)
		}
		n.start(lns[i])
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

// followersOf are the connected nodes but leader.
func (tc *testCluster) followersOf(leader *node) []*node {
	var out []*node
	for _, n := range tc.connected() {
		if n != leader {
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
	testutil.WaitFor(tc.t, timeout, fmt.Sprintf("a leader that %d connected nodes agree on", want), func() bool {
		leader = nil
		nodes := tc.connected()
		if len(nodes) < want {
			return false
		}
		for _, n := range nodes {
			if n.raft().IsLeader() {
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
			if id, _ := n.raft().Leader(); id != leader.id || !n.srv.Ready() {
				return false
			}
		}
		return true
	})
	return leader
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
