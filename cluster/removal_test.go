package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftcron/raftcron/internal/testutil"
)

// A leader whose own removal is in its log, not yet committed, proposes
// nothing more: once the removal commits, its Raft shuts down and never
// answers what it still queued, so a write accepted meanwhile would hang
// until its caller's deadline and end indeterminate.
func TestLeaderBeingRemovedProposesNothingMore(t *testing.T) {
	tc, disks := stallableCluster(t)
	leader := tc.waitLeader(10 * time.Second)
	// Raft takes a configuration change only once the configuration before
	// it is committed, and a new leader's bootstrap configuration is only
	// once an entry of its term is: with the followers stalled before that,
	// the removal never reaches the log.
	put(t, leader.node, "before", "@hourly")
	for _, f := range tc.followers(leader) {
		disks[f.id].stall() // heartbeats go on, nothing commits
	}
	removed := make(chan error, 1)
	go func() { removed <- leader.node.RemoveServer(ctxTimeout(t, 30*time.Second), leader.id) }()
	testutil.WaitFor(t, 5*time.Second, "the removal in the leader's log", func() bool {
		_, in := leader.node.server(leader.id)
		return !in
	})

	start := time.Now()
	_, err := leader.node.ApplyLocal(ctxTimeout(t, 2*time.Second), putCmd("after", "@daily"))
	if !errors.Is(err, ErrNotLeader) || errors.Is(err, ErrIndeterminate) {
		t.Fatalf("ApplyLocal on a leader removing itself: %v after %s, want ErrNotLeader at once", err, time.Since(start))
	}

	for _, f := range tc.followers(leader) {
		disks[f.id].release()
	}
	if err := <-removed; err != nil {
		t.Fatalf("RemoveServer(%s) on itself: %v", leader.id, err)
	}
	rest := tc.followers(leader)
	readBarrier(t, rest[0].node)
	if _, ok := rest[0].fsm.get("after"); ok {
		t.Error("the write refused by the leader being removed was committed")
	}
}

// Raft's apply queue is buffered: when Raft stops, what waits in it is
// never answered. A proposal caught there is answered indeterminate soon
// after Raft stopped, not at its caller's deadline (or never, for a caller
// without one).
func TestProposalLeftInRaftsQueueIsAnsweredWhenRaftStops(t *testing.T) {
	tc, disks := stallableCluster(t)
	leader := tc.waitLeader(10 * time.Second)
	put(t, leader.node, "before", "@hourly")
	disks[leader.id].stall()
	const deadline = 30 * time.Second
	first := leader.node.ProposeLocal(ctxTimeout(t, deadline), putCmd("first", "@daily"))
	testutil.WaitFor(t, 5*time.Second, "Raft's leader loop blocked in its write", func() bool {
		return diskWriteAge(t, leader.node) > 0
	})
	queued := leader.node.ProposeLocal(ctxTimeout(t, deadline), putCmd("queued", "@daily"))
	stopped := leader.node.raft.Shutdown()
	disks[leader.id].release()

	start := time.Now()
	_, err := queued()
	if took := time.Since(start); took > strandedWait+5*time.Second {
		t.Errorf("the queued proposal was answered %s after Raft stopped (its deadline: %s)", took, deadline)
	}
	if !errors.Is(err, ErrIndeterminate) {
		t.Errorf("queued proposal: %v, want ErrIndeterminate", err)
	}
	if _, err := first(); !errors.Is(err, ErrIndeterminate) {
		t.Errorf("proposal in Raft's write: %v, want ErrIndeterminate", err)
	}
	if err := stopped.Error(); err != nil {
		t.Fatal(err)
	}
}

// answered is a proposal's future that Raft has answered with err.
type answered struct {
	raft.ApplyFuture
	err error
}

func (a answered) Error() error { return a.err }

// Raft answers ErrRaftShutdown to a proposal it never queued and also to a
// committed entry its FSM loop never took (processLogs on shutdown): the
// outcome is unknown, and "shut down" would read as nothing written.
func TestProposalAnsweredRaftShutdownIsIndeterminate(t *testing.T) {
	n := &Node{raftStop: newRaftStop()}
	_, _, err := n.futureOutcome(t.Context(), answered{err: raft.ErrRaftShutdown})
	if !errors.Is(err, ErrIndeterminate) || errors.Is(err, ErrShutdown) {
		t.Errorf("futureOutcome: %v, want ErrIndeterminate and not ErrShutdown", err)
	}
	if got := n.futureResult(answered{err: raft.ErrRaftShutdown}); !errors.Is(got.Err, ErrIndeterminate) || errors.Is(got.Err, ErrShutdown) {
		t.Errorf("futureResult: %v, want ErrIndeterminate and not ErrShutdown", got.Err)
	}
}
