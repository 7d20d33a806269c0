package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftcron/raftcron/internal/testutil"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestFirstLeaderElected(t *testing.T) {
	start := time.Now()
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	t.Logf("cold 3-node start: first leader %s after %s", leader.id, time.Since(start))

	testutil.WaitFor(t, 5*time.Second, "leader's watcher to report leadership", func() bool {
		return leader.node.IsLeader() && leader.node.LeaderChanges() == 1
	})
	if got := leader.leader.snapshot(); len(got) != 1 || !got[0] {
		t.Errorf("leader's OnLeadershipChange calls = %v, want [true]", got)
	}
	for _, f := range tc.followers(leader) {
		if f.node.IsLeader() || f.node.LeaderChanges() != 0 {
			t.Errorf("follower %s: IsLeader=%v LeaderChanges=%d, want false, 0", f.id, f.node.IsLeader(), f.node.LeaderChanges())
		}
		if !f.node.bootstrapped {
			t.Errorf("%s did not bootstrap on first start", f.id)
		}
	}
}

func TestWriteThroughFollowerIsForwardedAndReplicated(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	follower := tc.followers(leader)[0]

	res := put(t, follower.node, "billing", "0 2 * * *")
	if !res.GetCreated() {
		t.Errorf("result %v: want created", res)
	}
	for _, tn := range tc.nodes {
		testutil.WaitFor(t, 5*time.Second, "billing on "+tn.id, func() bool {
			v, ok := tn.fsm.get("billing")
			return ok && v == "0 2 * * *"
		})
	}
	// The leader acknowledged only after its own FSM applied the entry.
	if _, ok := leader.fsm.get("billing"); !ok {
		t.Error("leader acknowledged a write its FSM had not applied")
	}
}

func TestReadBarrierOnFollowerSeesWrite(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	fs := tc.followers(leader)
	for i := range 20 {
		name := fmt.Sprintf("job-%d", i)
		// Written through one follower, read on the other right after.
		put(t, fs[0].node, name, "@hourly")
		readBarrier(t, fs[1].node)
		if _, ok := fs[1].fsm.get(name); !ok {
			t.Fatalf("after ReadBarrier, %s does not see %s acknowledged before it", fs[1].id, name)
		}
		readBarrier(t, leader.node)
		if _, ok := leader.fsm.get(name); !ok {
			t.Fatalf("after ReadBarrier, leader does not see %s", name)
		}
	}
}

// A follower learns of commits from the leader's AppendEntries, which a
// leader with nothing new to send sends only every CommitTimeout. A read
// on a follower behind the read index has the leader announce its commit
// index at once: with a CommitTimeout of a minute, each read still sees
// the write acknowledged just before it, within its 5 s deadline.
func TestFollowerReadDoesNotWaitForCommitTimeout(t *testing.T) {
	slow := func(c *Config) { c.tune = func(rc *raft.Config) { rc.CommitTimeout = time.Minute } }
	tc := newCluster(t, 3, slow)
	leader := tc.waitLeader(10 * time.Second)
	f := tc.followers(leader)[0]
	for i := range 5 {
		name := fmt.Sprintf("job-%d", i)
		put(t, leader.node, name, "@hourly")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := f.node.ReadBarrier(ctx)
		cancel()
		if err != nil {
			t.Fatalf("ReadBarrier on %s after writing %s: %v", f.id, name, err)
		}
		if _, ok := f.fsm.get(name); !ok {
			t.Fatalf("after ReadBarrier, %s does not see %s acknowledged before it", f.id, name)
		}
	}
}

// AnnounceCommit tells the followers of the leader's commits at once: with
// a CommitTimeout of a minute, they apply a write within a second of it.
func TestAnnounceCommitReachesTheFollowers(t *testing.T) {
	slow := func(c *Config) { c.tune = func(rc *raft.Config) { rc.CommitTimeout = time.Minute } }
	tc := newCluster(t, 3, slow)
	leader := tc.waitLeader(10 * time.Second)
	for i := range 3 {
		name := fmt.Sprintf("job-%d", i)
		put(t, leader.node, name, "@hourly")
		leader.node.AnnounceCommit(context.Background())
		for _, f := range tc.followers(leader) {
			testutil.WaitFor(t, time.Second, f.id+" to apply "+name, func() bool {
				_, ok := f.fsm.get(name)
				return ok
			})
		}
	}
}

func TestLeaderCrashFailover(t *testing.T) {
	tc := newCluster(t, 3)
	old := tc.waitLeader(10 * time.Second)
	put(t, old.node, "before", "@daily")

	start := time.Now()
	old.crash()
	leader := tc.waitLeader(10 * time.Second)
	t.Logf("failover after leader crash: %s (heartbeat %s, election %s)", time.Since(start), testHeartbeat, testElection)
	if leader.id == old.id {
		t.Fatalf("crashed node %s still leads", old.id)
	}
	for _, tn := range tc.running() {
		put(t, tn.node, "after-"+tn.id, "@daily")
	}
	for _, tn := range tc.running() {
		readBarrier(t, tn.node)
		for _, name := range []string{"before", "after-" + tc.running()[0].id, "after-" + tc.running()[1].id} {
			if _, ok := tn.fsm.get(name); !ok {
				t.Errorf("%s lacks %s after failover", tn.id, name)
			}
		}
	}
}

func TestGracefulShutdownTransfersLeadership(t *testing.T) {
	tc := newCluster(t, 3)
	old := tc.waitLeader(10 * time.Second)
	testutil.WaitFor(t, 5*time.Second, "watcher to see leadership", old.node.IsLeader)

	start := time.Now()
	old.stop()
	leader := tc.waitLeader(10 * time.Second)
	t.Logf("failover by graceful leader shutdown: %s", time.Since(start))
	if got := old.leader.snapshot(); len(got) != 2 || !got[0] || got[1] {
		t.Errorf("stopped leader's OnLeadershipChange calls = %v, want [true false]", got)
	}
	if old.node.IsLeader() {
		t.Error("stopped node still reports IsLeader")
	}
	put(t, leader.node, "after", "@daily")
}

func TestRestartWholeClusterKeepsState(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	for i := range 30 {
		put(t, tc.nodes[i%3].node, fmt.Sprintf("job-%d", i), "@hourly")
	}
	// One node restarts from a snapshot plus log, the others from log only.
	if err := leader.node.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	put(t, leader.node, "after-snapshot", "@hourly")
	var peers []Peer
	for _, tn := range tc.nodes {
		peers = append(peers, Peer{ID: tn.id, Addr: tn.addr})
		if !tn.node.bootstrapped {
			t.Errorf("%s did not bootstrap on first start", tn.id)
		}
	}
	for _, tn := range tc.nodes {
		tn.stop()
	}

	restarted := &testCluster{tb: t}
	for _, old := range tc.nodes {
		tn := startNode(t, old.id, old.dir, listen(t, old.addr), func(c *Config) { c.Peers = peers })
		if tn.node.bootstrapped {
			t.Errorf("%s bootstrapped again over existing state", tn.id)
		}
		restarted.nodes = append(restarted.nodes, tn)
	}
	restarted.waitLeader(10 * time.Second)
	for _, tn := range restarted.nodes {
		// Ready must not hold before the replay of the old log is done.
		testutil.WaitFor(t, 5*time.Second, tn.id+" ready", tn.node.Ready)
		if got := tn.fsm.len(); got != 31 {
			t.Errorf("%s ready with %d jobs after restart, want 31", tn.id, got)
		}
		readBarrier(t, tn.node)
		if got := len(tn.node.Status().GetServers()); got != 3 {
			t.Errorf("%s sees %d servers after restart, want 3", tn.id, got)
		}
	}
	put(t, restarted.nodes[0].node, "after-restart", "@hourly")
}

func TestFiveNodesSurviveTwoDown(t *testing.T) {
	tc := newCluster(t, 5)
	leader := tc.waitLeader(10 * time.Second)
	put(t, leader.node, "before", "@daily")
	tc.followers(leader)[0].crash()
	leader.crash()

	tc.waitLeader(10 * time.Second)
	for _, tn := range tc.running() {
		put(t, tn.node, "after-"+tn.id, "@daily")
	}
	for _, tn := range tc.running() {
		readBarrier(t, tn.node)
		if got := tn.fsm.len(); got != 4 {
			t.Errorf("%s has %d jobs, want 4", tn.id, got)
		}
	}
}

func TestApplyWithoutQuorumReturnsByDeadline(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	for _, f := range tc.followers(leader) {
		f.crash()
	}
	const deadline = 2 * time.Second
	for _, op := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"Apply", func(ctx context.Context) error { _, err := leader.node.Apply(ctx, putCmd("x", "@daily")); return err }},
		{"ReadBarrier", leader.node.ReadBarrier},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		start := time.Now()
		err := op.run(ctx)
		took := time.Since(start)
		cancel()
		if err == nil {
			t.Errorf("%s without quorum succeeded", op.name)
		}
		if took > deadline+time.Second {
			t.Errorf("%s without quorum took %s, deadline %s", op.name, took, deadline)
		}
		known := errors.Is(err, ErrNoLeader) || errors.Is(err, ErrIndeterminate) || errors.Is(err, context.DeadlineExceeded)
		if !known {
			t.Errorf("%s without quorum: %v, want ErrNoLeader, ErrIndeterminate or a deadline error", op.name, err)
		}
		t.Logf("%s without quorum: %v after %s", op.name, err, took)
	}
}

// lonelyNode starts n1 of a 3-node configuration whose peers never come up,
// so no leader can ever be elected.
func lonelyNode(t *testing.T) *testNode {
	t.Helper()
	mux := listen(t, "127.0.0.1:0")
	peers := []Peer{{ID: "n1", Addr: mux.Addr().String()}}
	for _, id := range []string{"n2", "n3"} {
		m := listen(t, "127.0.0.1:0")
		peers = append(peers, Peer{ID: id, Addr: m.Addr().String()})
		m.Close() // connections to it are refused
	}
	return startNode(t, "n1", t.TempDir(), mux, func(c *Config) { c.Peers = peers })
}

func TestNoLeaderKnown(t *testing.T) {
	tn := lonelyNode(t)
	ctx := ctxTimeout(t, 5*time.Second)
	start := time.Now()
	_, err := tn.node.Apply(ctx, putCmd("x", "@daily"))
	var nl *NoLeaderError
	if !errors.As(err, &nl) || !errors.Is(err, ErrNoLeader) {
		t.Fatalf("Apply with no leader: %v, want *NoLeaderError matching ErrNoLeader", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Apply with no leader took %s; it should fail at once", took)
	}
	if err := tn.node.ReadBarrier(ctx); !errors.Is(err, ErrNoLeader) {
		t.Errorf("ReadBarrier with no leader: %v, want ErrNoLeader", err)
	}
	if err := tn.node.AddVoter(ctx, "n9", "127.0.0.1:1"); !errors.Is(err, ErrNoLeader) {
		t.Errorf("AddVoter with no leader: %v, want ErrNoLeader", err)
	}
	if tn.node.Ready() {
		t.Error("Ready() with no leader")
	}
	if st := tn.node.Status(); st.GetLeader() != nil || st.GetState() == "leader" {
		t.Errorf("Status with no leader: %v", st)
	}
	if _, err := tn.node.Apply(ctx, nil); err == nil {
		t.Error("Apply(nil) succeeded")
	}
}

func TestDataDirLockedFailsFast(t *testing.T) {
	tn := lonelyNode(t)
	mux := listen(t, "127.0.0.1:0")
	defer mux.Close()
	start := time.Now()
	_, err := New(Config{ID: "n1", DataDir: tn.dir, FSM: newKVFSM(), Logger: testLogger(), NoSync: true}, mux)
	took := time.Since(start)
	if !errors.Is(err, ErrDataDirLocked) {
		t.Fatalf("second node on %s: %v, want ErrDataDirLocked", tn.dir, err)
	}
	want := "data dir " + tn.dir + " is in use by another raftcron process"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if took > 5*time.Second {
		t.Errorf("took %s to fail", took)
	}
}

func TestJoinAddsNodeAndShipsState(t *testing.T) {
	// Keep almost no log after a snapshot so the joiner needs the snapshot.
	small := func(c *Config) { c.tune = func(rc *raft.Config) { rc.TrailingLogs = 2 } }
	tc := newCluster(t, 3, small)
	leader := tc.waitLeader(10 * time.Second)
	for i := range 10 {
		put(t, leader.node, fmt.Sprintf("job-%d", i), "@hourly")
	}
	if err := leader.node.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	put(t, leader.node, "after-snapshot", "@hourly")

	// Joined through a follower, which names the leader.
	via := tc.followers(leader)[0]
	n4 := startNode(t, "n4", t.TempDir(), listen(t, "127.0.0.1:0"), small, func(c *Config) { c.Join = []string{via.addr} })
	tc.nodes = append(tc.nodes, n4)
	if n4.node.bootstrapped {
		t.Error("joiner bootstrapped")
	}
	testutil.WaitFor(t, 10*time.Second, "joiner ready", n4.node.Ready)
	readBarrier(t, n4.node)
	if got := n4.fsm.len(); got != 11 {
		t.Errorf("joiner has %d jobs after ReadBarrier, want 11", got)
	}
	st := leader.node.Status()
	voters := 0
	for _, s := range st.GetServers() {
		if s.GetSuffrage() == "voter" {
			voters++
		}
	}
	if voters != 4 {
		t.Errorf("leader sees %d voters, want 4: %v", voters, st.GetServers())
	}
	put(t, n4.node, "from-joiner", "@hourly")
	readBarrier(t, leader.node)
	if _, ok := leader.fsm.get("from-joiner"); !ok {
		t.Error("write through the joiner missing on the leader")
	}
}

func TestAddVoterIsIdempotent(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	f := tc.followers(leader)[0]
	ctx := ctxTimeout(t, 5*time.Second)
	for _, via := range []*testNode{leader, f} {
		if err := via.node.AddVoter(ctx, f.id, f.addr); err != nil {
			t.Errorf("AddVoter(existing %s, same address) via %s: %v", f.id, via.id, err)
		}
		if err := via.node.AddVoter(ctx, f.id, "127.0.0.1:1"); !errors.Is(err, ErrServerExists) {
			t.Errorf("AddVoter(%s, other address) via %s: %v, want ErrServerExists", f.id, via.id, err)
		}
		if err := via.node.AddVoter(ctx, "n9", f.addr); !errors.Is(err, ErrServerExists) {
			t.Errorf("AddVoter(new id, %s's address) via %s: %v, want ErrServerExists", f.id, via.id, err)
		}
		if err := via.node.AddVoter(ctx, "bad id", f.addr); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("AddVoter(bad id) via %s: %v, want ErrInvalidConfig", via.id, err)
		}
	}
	if got := len(leader.node.Status().GetServers()); got != 3 {
		t.Errorf("configuration has %d servers, want 3", got)
	}
}

func TestRemoveServer(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	fs := tc.followers(leader)
	gone, via := fs[0], fs[1]
	ctx := ctxTimeout(t, 5*time.Second)

	if err := via.node.RemoveServer(ctx, gone.id); err != nil {
		t.Fatalf("RemoveServer(%s) via follower %s: %v", gone.id, via.id, err)
	}
	// The leader replicates the new configuration to the removed node
	// before letting it go, so it knows it is out and never campaigns.
	testutil.WaitFor(t, 5*time.Second, "removed node to learn its removal", func() bool {
		for _, s := range gone.node.Status().GetServers() {
			if s.GetId() == gone.id {
				return false
			}
		}
		return true
	})
	for _, tn := range []*testNode{leader, via} {
		for _, s := range tn.node.Status().GetServers() {
			if s.GetId() == gone.id {
				t.Errorf("%s still lists removed %s", tn.id, gone.id)
			}
		}
	}
	gone.stop()
	put(t, via.node, "after-remove", "@daily")

	for _, tn := range []*testNode{leader, via} {
		err := tn.node.RemoveServer(ctx, "nope")
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nope") {
			t.Errorf("RemoveServer(unknown) via %s: %v, want ErrNotFound naming the id", tn.id, err)
		}
	}
}

func TestTransferLeadership(t *testing.T) {
	tc := newCluster(t, 3)
	old := tc.waitLeader(10 * time.Second)
	fs := tc.followers(old)
	target, via := fs[0], fs[1]
	ctx := ctxTimeout(t, 10*time.Second)

	ref, err := via.node.TransferLeadership(ctx, target.id)
	if err != nil {
		t.Fatalf("TransferLeadership(%s) via %s: %v", target.id, via.id, err)
	}
	if ref.GetId() != target.id || ref.GetAddress() != target.addr {
		t.Errorf("new leader %v, want %s at %s", ref, target.id, target.addr)
	}
	if leader := tc.waitLeader(10 * time.Second); leader != target {
		t.Errorf("leader is %s, want %s", leader.id, target.id)
	}
	testutil.WaitFor(t, 5*time.Second, "watchers to follow the transfer", func() bool {
		return target.node.IsLeader() && !old.node.IsLeader() && old.node.LeaderChanges() == 2
	})
	if _, err := target.node.TransferLeadership(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("TransferLeadership(unknown): %v, want ErrNotFound", err)
	}
	ref, err = target.node.TransferLeadership(ctx, target.id)
	if err != nil || ref.GetId() != target.id {
		t.Errorf("TransferLeadership(self) on leader: %v, %v; want no-op", ref, err)
	}
	put(t, old.node, "after-transfer", "@daily")
}

func TestStatus(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	put(t, leader.node, "x", "@daily")
	for _, tn := range tc.nodes {
		testutil.WaitFor(t, 5*time.Second, tn.id+" ready", tn.node.Ready)
		st := tn.node.Status()
		wantState := "follower"
		if tn == leader {
			wantState = "leader"
		}
		if st.GetId() != tn.id || st.GetAddress() != tn.addr || st.GetState() != wantState {
			t.Errorf("%s: id %q address %q state %q, want %q %q %q", tn.id, st.GetId(), st.GetAddress(), st.GetState(), tn.id, tn.addr, wantState)
		}
		if st.GetLeader().GetId() != leader.id || st.GetLeader().GetAddress() != leader.addr {
			t.Errorf("%s: leader %v, want %s at %s", tn.id, st.GetLeader(), leader.id, leader.addr)
		}
		if st.GetTerm() == 0 || st.GetCommitIndex() == 0 || st.GetAppliedIndex() == 0 || st.GetLastLogIndex() < st.GetCommitIndex() {
			t.Errorf("%s: implausible indexes %v", tn.id, st)
		}
		if st.GetCommandVersion() != 1 {
			t.Errorf("%s: command version %d, want 1 (the default)", tn.id, st.GetCommandVersion())
		}
		if st.GetFencingToken() != 0 {
			t.Errorf("%s: fencing token %d, want 0 (filled by the caller)", tn.id, st.GetFencingToken())
		}
		leaders := 0
		for _, s := range st.GetServers() {
			if s.GetSuffrage() != "voter" {
				t.Errorf("%s: server %v not a voter", tn.id, s)
			}
			if s.GetLeader() {
				leaders++
				if s.GetId() != leader.id {
					t.Errorf("%s: server %s flagged leader", tn.id, s.GetId())
				}
			}
		}
		if len(st.GetServers()) != 3 || leaders != 1 {
			t.Errorf("%s: servers %v, want 3 with one leader", tn.id, st.GetServers())
		}
	}
}

func TestShutdownIsIdempotentAndFinal(t *testing.T) {
	mux := listen(t, "127.0.0.1:0")
	single := func(c *Config) { c.Peers = []Peer{{ID: "solo", Addr: mux.Addr().String()}} }
	tn := startNode(t, "solo", t.TempDir(), mux, single)
	testutil.WaitFor(t, 10*time.Second, "single node to lead", tn.node.IsLeader)
	put(t, tn.node, "x", "@daily")

	ctx := ctxTimeout(t, 5*time.Second)
	if err := tn.node.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := tn.node.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if _, err := tn.node.Apply(ctx, putCmd("y", "@daily")); !errors.Is(err, ErrShutdown) {
		t.Errorf("Apply after Shutdown: %v, want ErrShutdown", err)
	}
	if err := tn.node.ReadBarrier(ctx); !errors.Is(err, ErrShutdown) {
		t.Errorf("ReadBarrier after Shutdown: %v, want ErrShutdown", err)
	}
	if st := tn.node.Status(); st.GetState() != "shutdown" {
		t.Errorf("state after Shutdown %q, want shutdown", st.GetState())
	}
	if tn.node.Ready() || tn.node.IsLeader() {
		t.Error("node ready or leading after Shutdown")
	}
	if got := tn.leader.snapshot(); len(got) != 2 || !got[0] || got[1] {
		t.Errorf("OnLeadershipChange calls %v, want [true false]", got)
	}
}

func TestApplyReturnsFSMResult(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	f := tc.followers(leader)[0]
	ctx := ctxTimeout(t, 5*time.Second)
	for _, tn := range []*testNode{leader, f} {
		del := &pb.Command{Kind: &pb.Command_DeleteJob{DeleteJob: &pb.DeleteJobCommand{Name: "missing"}}}
		res, err := tn.node.Apply(ctx, del)
		if err != nil || res.GetCode() != pb.ResultCode_RESULT_CODE_NOT_FOUND {
			t.Errorf("delete of a missing job via %s: %v, %v; want NOT_FOUND result", tn.id, res, err)
		}
		res, err = tn.node.Apply(ctx, &pb.Command{})
		if err != nil || res.GetCode() != pb.ResultCode_RESULT_CODE_MALFORMED {
			t.Errorf("empty command via %s: %v, %v; want MALFORMED result", tn.id, res, err)
		}
	}
}

// New opens the node but applies nothing: not even the snapshot Raft
// restores on start reaches the FSM before Start, so whatever observes the
// FSM can be wired between the two.
func TestNewAppliesNothingBeforeStart(t *testing.T) {
	mux := listen(t, "127.0.0.1:0")
	addr := mux.Addr().String()
	cfg := Config{ID: "n1", Addr: addr, DataDir: t.TempDir(), FSM: newKVFSM(), Logger: testLogger(), NoSync: true,
		Peers: []Peer{{ID: "n1", Addr: addr}}} // one node: it commits alone
	fastTimings(&cfg)
	n, err := New(cfg, mux)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "the one-node cluster to elect itself", n.IsLeader)
	ctx := ctxTimeout(t, 10*time.Second)
	for i := range 3 {
		if _, err := n.Apply(ctx, putCmd(fmt.Sprintf("job-%d", i), "@hourly")); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	mux.Close()

	mux = listen(t, addr)
	defer mux.Close()
	fresh := newKVFSM()
	cfg.FSM = fresh
	again, err := New(cfg, mux)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = again.Shutdown(context.Background()) })
	if got := fresh.len(); got != 0 {
		t.Fatalf("the FSM holds %d jobs after New, before Start; want 0", got)
	}
	if err := again.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "the restarted node to restore its 3 jobs", func() bool { return fresh.len() == 3 })
}

// A node never started shuts down cleanly and frees its data dir.
func TestShutdownBeforeStartReleasesTheDataDir(t *testing.T) {
	dir := t.TempDir()
	mux := listen(t, "127.0.0.1:0")
	defer mux.Close()
	cfg := Config{ID: "n1", DataDir: dir, FSM: newKVFSM(), Logger: testLogger(), NoSync: true}
	n, err := New(cfg, mux)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown before Start: %v", err)
	}
	if err := n.Start(context.Background()); err == nil {
		t.Error("Start after Shutdown succeeded")
	}
	other := listen(t, "127.0.0.1:0")
	defer other.Close()
	again, err := New(cfg, other)
	if err != nil {
		t.Fatalf("New on the released data dir: %v", err)
	}
	_ = again.Shutdown(t.Context())
}
