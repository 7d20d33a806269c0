package scheduler

import (
	"context"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Proposer commits commands through Raft on this node. The scheduler never
// touches Raft otherwise.
type Proposer interface {
	// Apply commits cmd and returns what the FSM made of it. An error means
	// the outcome is unknown: the scheduler then dispatches nothing.
	Apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error)
	// Propose is Apply in two steps: it returns once Raft holds cmd, and
	// wait returns what Apply would. Commands proposed one after another
	// commit in that order, which concurrent Applys do not promise: a
	// tick's small first entry must not land behind the large ones.
	Propose(ctx context.Context, cmd *pb.Command) (wait func() (*pb.CommandResult, error))
	// Barrier returns once this node, as leader, has applied every entry of
	// earlier terms; it fails if the node does not lead.
	Barrier(ctx context.Context) error
	// AnnounceCommit tells the followers of every commit so far now, not
	// with the next entry or Raft's commit timer, without waiting for them.
	AnnounceCommit(ctx context.Context)
	// Term is the current Raft term.
	Term() uint64
	// ID is this node's Raft server ID.
	ID() string
}

// LeaderNode is the leader-only half of the cluster package's Node: an apply
// that never forwards, so that a batch is committed by this node in its own
// term or not at all (the FSM also refuses a batch committed in another term).
type LeaderNode interface {
	ProposeLocal(ctx context.Context, cmd *pb.Command) (wait func() (*pb.CommandResult, error))
	Barrier(ctx context.Context) error
	AnnounceCommit(ctx context.Context)
	Term() uint64
	ID() string
}

// NewNodeProposer adapts a cluster node to Proposer.
func NewNodeProposer(n LeaderNode) Proposer { return nodeProposer{n} }

type nodeProposer struct{ LeaderNode }

func (p nodeProposer) Apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	return p.ProposeLocal(ctx, cmd)()
}

func (p nodeProposer) Propose(ctx context.Context, cmd *pb.Command) func() (*pb.CommandResult, error) {
	return p.ProposeLocal(ctx, cmd)
}
