package cluster

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Calls that act on this node alone and never forward, for the leader-only
// scheduler: a leader's own work must be committed by itself, in its own
// term, or not at all (DESIGN G2).

// ID is this node's Raft server ID.
func (n *Node) ID() string { return n.cfg.ID }

// Term is the current Raft term as this node knows it.
func (n *Node) Term() uint64 { return n.raft.CurrentTerm() }

// ApplyLocal commits cmd through this node's Raft log if it is the leader,
// and fails with ErrNotLeader otherwise. Errors are those of Apply. Unlike
// Apply it keeps cmd's proposed_at: its caller is the leader's own
// scheduler, which stamps with its own clock, on this very node. It is
// the only way FireBatch and CompleteBatch reach the log.
func (n *Node) ApplyLocal(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	return n.ProposeLocal(ctx, cmd)()
}

// ProposeLocal is ApplyLocal in two steps: it returns once Raft holds cmd,
// and the function it returns waits for the commit and returns what
// ApplyLocal would. Commands proposed one after another commit in that
// order; concurrent ApplyLocal calls commit in any. ctx bounds both steps.
func (n *Node) ProposeLocal(ctx context.Context, cmd *pb.Command) (wait func() (*pb.CommandResult, error)) {
	if cmd == nil {
		return notProposed(errors.New("apply: nil command"))
	}
	data, err := proto.Marshal(cmd)
	if err != nil {
		return notProposed(fmt.Errorf("apply: marshal command: %w", err))
	}
	f, err := n.proposeLocal(ctx, cmd, data)
	if err != nil {
		return notProposed(err)
	}
	return func() (*pb.CommandResult, error) {
		res, _, err := n.futureOutcome(ctx, f)
		return res, err
	}
}

// notProposed is the wait of a command Raft never held.
func notProposed(err error) func() (*pb.CommandResult, error) {
	return func() (*pb.CommandResult, error) { return nil, err }
}

// Barrier returns once every entry committed before the call, in this and
// earlier terms, has been applied to the FSM on this node, which must lead.
func (n *Node) Barrier(ctx context.Context) error {
	if n.closed.Load() {
		return ErrShutdown
	}
	if err := waitFuture(ctx, n.raft.Barrier(raftTimeout(ctx))); err != nil {
		return raftError(err)
	}
	return nil
}
