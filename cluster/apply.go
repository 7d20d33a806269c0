package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Apply commits cmd through Raft and returns what the FSM made of it. On a
// follower it is forwarded to the leader under the caller's deadline. The
// leader stamps cmd with its own clock (proposed_at is overwritten, here or
// on the leader it is forwarded to). FireBatch and CompleteBatch are
// refused with ErrNotForwardable: only ApplyLocal proposes them.
//
// Errors: *NoLeaderError (ErrNoLeader) when no leader is known or
// reachable; ErrUnsupportedCommand when a voter does not apply the
// command's version (checked here before forwarding too; nothing was
// written); ErrIndeterminate when the command reached Raft but its fate is
// unknown (it may still commit, so do not treat it as failed); ErrShutdown;
// context errors when ctx ends before Raft is handed the command.
func (n *Node) Apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	if cmd == nil {
		return nil, errors.New("apply: nil command")
	}
	if err := forwardable(cmd); err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	leading := n.raft.State() == raft.Leader
	if leading {
		n.stamp(cmd)
	}
	data, err := proto.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("apply: marshal command: %w", err)
	}
	if leading {
		res, _, err := n.applyLocal(ctx, cmd, data)
		if !errors.Is(err, ErrNotLeader) {
			return res, err
		}
		// Leadership moved before Raft took the entry: nothing was written,
		// so one forward is safe (the new leader stamps it again).
	}
	// The leader checks the version again, but a leader of a release from
	// before versions checks nothing: it would commit what it and other
	// voters cannot apply.
	if err := n.admit(ctx, cmd); err != nil {
		return nil, err
	}
	return n.forwardApply(ctx, data)
}

// applyLocal proposes data, the marshalled cmd, on this node, which must be
// the leader, and waits for its commit.
func (n *Node) applyLocal(ctx context.Context, cmd *pb.Command, data []byte) (*pb.CommandResult, uint64, error) {
	f, err := n.proposeLocal(ctx, cmd, data)
	if err != nil {
		return nil, 0, err
	}
	return n.futureOutcome(ctx, f)
}

// proposeLocal hands data, the marshalled cmd, to this node's Raft, which
// must lead, and returns once Raft holds it. An error means nothing was
// proposed.
func (n *Node) proposeLocal(ctx context.Context, cmd *pb.Command, data []byte) (raft.ApplyFuture, error) {
	if n.closed.Load() {
		return nil, ErrShutdown
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !n.proposes() {
		return nil, ErrNotLeader
	}
	if err := n.admit(ctx, cmd); err != nil {
		return nil, err
	}
	return n.proposals.propose(ctx, n.raft, data, raftTimeout(ctx))
}

// proposes reports whether this node may propose: it leads, and its own
// removal is not in its log. A leader that removes itself leads until the
// removal commits, but then its Raft shuts down without answering what it
// still queued (the queue is buffered, see raftConfig): a command accepted
// meanwhile would neither be written nor ever be answered.
func (n *Node) proposes() bool {
	if n.raft.State() != raft.Leader {
		return false
	}
	s, ok := n.server(n.cfg.ID)
	return ok && s.Suffrage == raft.Voter
}

// futureOutcome waits for a proposed entry, or for ctx, and maps its
// outcome.
func (n *Node) futureOutcome(ctx context.Context, f raft.ApplyFuture) (*pb.CommandResult, uint64, error) {
	if err := n.awaitProposal(ctx, f); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// Raft holds the entry; it may still commit.
			return nil, 0, fmt.Errorf("apply: %w: %w", ErrIndeterminate, err)
		}
		return nil, 0, proposalError(err)
	}
	res, err := appliedResult(f)
	return res, f.Index(), err
}

// appliedResult is what the FSM made of a committed entry: every apply,
// single or bulk, reads its outcome here.
func appliedResult(f raft.ApplyFuture) (*pb.CommandResult, error) {
	switch resp := f.Response().(type) {
	case *pb.CommandResult:
		return resp, nil
	case error:
		return nil, fmt.Errorf("apply: fsm: %w", resp)
	default:
		return nil, fmt.Errorf("apply: fsm returned %T, want *pb.CommandResult", resp)
	}
}

func (n *Node) forwardApply(ctx context.Context, data []byte) (*pb.CommandResult, error) {
	c, leader, err := n.leaderClient()
	if err != nil {
		return nil, err
	}
	resp, err := c.Apply(ctx, &pb.ApplyRequest{Command: data})
	if err != nil {
		err = forwardError(leader, err)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			// The leader may have taken the command before the deadline hit.
			err = fmt.Errorf("%w: %w", ErrIndeterminate, err)
		}
		return nil, err
	}
	if resp.GetResult() == nil {
		return nil, fmt.Errorf("apply: leader %s returned no result", leader.Id)
	}
	return resp.GetResult(), nil
}
