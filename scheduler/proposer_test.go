package scheduler

import (
	"context"
	"testing"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

type leaderNodeFake struct{ local int }

func (n *leaderNodeFake) ProposeLocal(context.Context, *pb.Command) func() (*pb.CommandResult, error) {
	n.local++
	return func() (*pb.CommandResult, error) { return &pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_OK}, nil }
}
func (n *leaderNodeFake) Barrier(context.Context) error  { return nil }
func (n *leaderNodeFake) AnnounceCommit(context.Context) {}
func (n *leaderNodeFake) Term() uint64                   { return 7 }
func (n *leaderNodeFake) ID() string                     { return "n1" }

// TestNodeProposerNeverForwards: the scheduler's proposals go to the
// leader-only apply; a forwarding apply would let another node commit them.
func TestNodeProposerNeverForwards(t *testing.T) {
	n := &leaderNodeFake{}
	p := NewNodeProposer(n)
	if _, err := p.Apply(context.Background(), &pb.Command{}); err != nil || n.local != 1 {
		t.Fatalf("Apply: err %v, ProposeLocal calls %d; want one ProposeLocal", err, n.local)
	}
	if _, err := p.Propose(context.Background(), &pb.Command{})(); err != nil || n.local != 2 {
		t.Fatalf("Propose: err %v, ProposeLocal calls %d; want two", err, n.local)
	}
	if p.Term() != 7 || p.ID() != "n1" {
		t.Fatalf("Term/ID = %d/%q", p.Term(), p.ID())
	}
}
