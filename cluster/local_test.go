package cluster

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// TestLeaderOnlyCallsNeverForward checks what the scheduler relies on for
// G2: a follower's ApplyLocal and Barrier refuse instead of forwarding, so a
// node can only ever act on entries it committed itself while leading.
func TestLeaderOnlyCallsNeverForward(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	f := tc.followers(leader)[0]
	ctx := ctxTimeout(t, 5*time.Second)

	if _, err := f.node.ApplyLocal(ctx, putCmd("via-follower", "@hourly")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("ApplyLocal on a follower: err = %v, want ErrNotLeader", err)
	}
	if _, ok := f.fsm.get("via-follower"); ok {
		t.Fatal("ApplyLocal on a follower wrote the entry anyway")
	}
	if err := f.node.Barrier(ctx); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Barrier on a follower: err = %v, want ErrNotLeader", err)
	}

	res, err := leader.node.ApplyLocal(ctx, putCmd("via-leader", "@hourly"))
	if err != nil || res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		t.Fatalf("ApplyLocal on the leader: %v, %v", res, err)
	}
	if err := leader.node.Barrier(ctx); err != nil {
		t.Fatalf("Barrier on the leader: %v", err)
	}
	if _, ok := leader.fsm.get("via-leader"); !ok {
		t.Fatal("after Barrier the leader's FSM lacks its own entry")
	}
	if leader.node.Term() == 0 || leader.node.Term() != f.node.Term() {
		t.Fatalf("terms: leader %d, follower %d; want equal and > 0", leader.node.Term(), f.node.Term())
	}
	if leader.node.ID() != leader.id {
		t.Fatalf("ID() = %q, want %q", leader.node.ID(), leader.id)
	}
}

func TestLeaderConn(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	f := tc.followers(leader)[0]

	if _, err := leader.node.LeaderConn(); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("LeaderConn on the leader itself: err = %v, want ErrNoLeader", err)
	}
	cc, err := f.node.LeaderConn()
	if err != nil {
		t.Fatalf("LeaderConn on a follower: %v", err)
	}
	// Only the leader answers ReadIndex, so an answer proves where the conn goes.
	resp, err := pb.NewInternalServiceClient(cc).ReadIndex(ctxTimeout(t, 5*time.Second), &pb.ReadIndexRequest{})
	if err != nil || resp.GetIndex() == 0 {
		t.Fatalf("ReadIndex through LeaderConn: %v, %v", resp, err)
	}
}

// TestProposeLocalCommitsInCallOrder: commands proposed one after another
// reach the log in that order, though none waited for the one before to
// commit, which is how the scheduler proposes a tick's entries.
func TestProposeLocalCommitsInCallOrder(t *testing.T) {
	tc := newCluster(t, 3)
	leader := tc.waitLeader(10 * time.Second)
	ctx := ctxTimeout(t, 10*time.Second)

	const n = 50
	waits := make([]func() (*pb.CommandResult, error), n)
	for i := range waits {
		waits[i] = leader.node.ProposeLocal(ctx, putCmd("ordered", fmt.Sprintf("@every %ds", i+1)))
	}
	for i, wait := range waits {
		if res, err := wait(); err != nil || res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
			t.Fatalf("proposal %d: %v, %v", i, res, err)
		}
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("@every %ds", i+1)
	}
	if got := leader.fsm.history("ordered"); !slices.Equal(got, want) {
		t.Fatalf("applied in the order %v, want %v", got, want)
	}
}
