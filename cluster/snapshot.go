package cluster

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"
)

// restoreTimeout bounds how long Raft may take to accept a user restore
// (and the no-op after it) when the caller sets no deadline.
const restoreTimeout = 10 * time.Minute

// SnapshotInfo describes a snapshot of the FSM: the Raft index and term of
// the last entry it reflects, its length in bytes and the node that took it.
type SnapshotInfo struct {
	Index  uint64
	Term   uint64
	Size   int64
	NodeID string
}

// TakeSnapshot, on the leader, has Raft snapshot the FSM after every entry
// committed before the call, and opens it. The snapshot is Raft's own (it
// also compacts the log); the caller streams it from disk and must close
// it. On any other node: ErrNotLeader.
func (n *Node) TakeSnapshot(ctx context.Context) (SnapshotInfo, io.ReadCloser, error) {
	if err := n.leaderCheck(); err != nil {
		return SnapshotInfo{}, nil, err
	}
	if err := waitFuture(ctx, n.raft.Barrier(raftTimeout(ctx))); err != nil {
		return SnapshotInfo{}, nil, fmt.Errorf("snapshot: barrier: %w", raftError(err))
	}
	f := n.raft.Snapshot()
	if err := waitFuture(ctx, f); err != nil {
		return SnapshotInfo{}, nil, fmt.Errorf("snapshot: %w", raftError(err))
	}
	meta, rc, err := f.Open()
	if err != nil {
		return SnapshotInfo{}, nil, fmt.Errorf("snapshot: open: %w", err)
	}
	return SnapshotInfo{Index: meta.Index, Term: meta.Term, Size: meta.Size, NodeID: n.cfg.ID}, rc, nil
}

// RestoreFunc hands RestoreSnapshot the FSM stream to restore and its
// exact length. It is called while this node proposes nothing and its FSM
// has applied every entry, so what it reads from the FSM stays true until
// the restore is done.
type RestoreFunc func() (io.Reader, int64, error)

// RestoreSnapshot replaces the state of the whole cluster with an FSM
// snapshot, through Raft's user restore on this node, which must lead
// (ErrNotLeader otherwise). from names where the snapshot was taken; the
// restored state gets an index above both that and this cluster's log.
//
// Raft writes the stream into a new snapshot of this node, restores its
// FSM from it, and followers install that same snapshot, so what the
// stream holds is what every node ends with. Until then this node proposes
// nothing: proposals wait (up to their own deadline) and every entry before
// the restore is applied before prepare runs. The FSM must accept the
// stream: Raft stops the process if it does not, so verify it first.
//
// Returns the index the restored state starts at. ErrIndeterminate: Raft
// took the restore but leadership was lost before the cluster confirmed it.
func (n *Node) RestoreSnapshot(ctx context.Context, from SnapshotInfo, prepare RestoreFunc) (uint64, error) {
	if err := n.leaderCheck(); err != nil {
		return 0, err
	}
	if err := n.proposals.pause(ctx); err != nil {
		return 0, fmt.Errorf("restore: %w", err)
	}
	defer n.proposals.resume()
	if err := waitFuture(ctx, n.raft.Barrier(raftTimeout(ctx))); err != nil {
		return 0, fmt.Errorf("restore: barrier: %w", raftError(err))
	}
	r, size, err := prepare()
	if err != nil {
		return 0, fmt.Errorf("restore: %w", err)
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: from.Index, Term: from.Term, Size: size}
	timeout := restoreTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	before := n.fsm.applied.Load()
	if err := n.raft.Restore(meta, r, timeout); err != nil {
		if n.fsm.applied.Load() != before {
			// The FSM took the snapshot; the no-op after it failed.
			return 0, fmt.Errorf("restore: %w: the snapshot is restored on this node, but the cluster "+
				"did not confirm it: %w", ErrIndeterminate, err)
		}
		return 0, fmt.Errorf("restore: %w", raftError(err))
	}
	idx := n.fsm.applied.Load()
	n.log.Info("restored a snapshot into the cluster", "index", idx, "from_index", from.Index, "from_term", from.Term)
	return idx, nil
}
