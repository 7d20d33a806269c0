package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// appliedPoll is how often a read barrier re-checks the FSM's progress;
// commits arrive within a few milliseconds on a healthy cluster.
const appliedPoll = 2 * time.Millisecond

// ReadBarrier returns once this node's FSM reflects every write committed
// before the call: reads made after it are linearizable, on any node. The
// leader confirms it still leads (ReadIndex, Raft thesis §6.4); a follower
// asks the leader for that index and waits until it has applied it.
func (n *Node) ReadBarrier(ctx context.Context) error {
	var idx uint64
	var err error
	if n.raft.State() == raft.Leader {
		idx, err = n.readIndex(ctx)
		if errors.Is(err, ErrNotLeader) {
			idx, err = n.forwardReadIndex(ctx)
		}
	} else {
		idx, err = n.forwardReadIndex(ctx)
	}
	if err != nil {
		return err
	}
	return n.waitApplied(ctx, idx)
}

// readIndex, on the leader, returns an index every write acknowledged
// before the call is at or below. A new leader's commit index may lag the
// true one until an entry of its own term commits, so the first read of a
// term commits a barrier; later ones only confirm leadership.
func (n *Node) readIndex(ctx context.Context) (uint64, error) {
	if n.closed.Load() {
		return 0, ErrShutdown
	}
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	term := n.raft.CurrentTerm()
	if n.barrierTerm.Load() != term {
		if err := n.awaitRead(ctx, n.raft.Barrier(raftTimeout(ctx))); err != nil {
			return 0, err
		}
		n.barrierTerm.Store(term)
	}
	idx := n.raft.CommitIndex()
	if err := n.awaitRead(ctx, n.raft.VerifyLeader()); err != nil {
		return 0, err
	}
	// Leading in the same term before and after means the commit index was
	// read while leading that term, after its barrier.
	if n.raft.CurrentTerm() != term {
		return 0, ErrNotLeader
	}
	return idx, nil
}

// awaitRead waits for a read's barrier or leadership check. Raft that
// stops (this leader removing itself) leaves them unanswered (stranded.go):
// then, after strandedWait at most, this node no longer leads, and the
// reader asks the next leader instead of waiting out its deadline. A
// barrier writes nothing, so its outcome does not matter.
func (n *Node) awaitRead(ctx context.Context, f raft.Future) error {
	err := awaitFuture(ctx, f, n.raftStop.ch)
	if errors.Is(err, errStranded) {
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	return raftError(err)
}

func (n *Node) forwardReadIndex(ctx context.Context) (uint64, error) {
	c, leader, err := n.leaderClient()
	if err != nil {
		return 0, err
	}
	resp, err := c.ReadIndex(ctx, &pb.ReadIndexRequest{CommitIndex: n.raft.CommitIndex()})
	if err != nil {
		return 0, forwardError(leader, err)
	}
	return resp.GetIndex(), nil
}

// AnnounceCommit has this node, as leader, send its commit index to the
// followers now rather than at Raft's next CommitTimeout (see
// commitTimeout): Raft sends it only with an AppendEntries, so this appends
// a barrier, which applies nothing. It waits only until Raft has taken the
// barrier (or ctx ends), not for its commit; on a follower it does nothing.
func (n *Node) AnnounceCommit(ctx context.Context) {
	if n.closed.Load() {
		return
	}
	n.raft.Barrier(raftTimeout(ctx))
}

// waitApplied blocks until the local FSM reflects idx or ctx ends.
func (n *Node) waitApplied(ctx context.Context, idx uint64) error {
	if n.fsmHasApplied(idx) {
		return nil
	}
	t := time.NewTicker(appliedPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if n.fsmHasApplied(idx) {
				return nil
			}
			if n.raft.State() == raft.Shutdown {
				return ErrShutdown
			}
		}
	}
}
