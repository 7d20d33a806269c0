package cluster

import (
	"errors"
	"io"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// trackingFSM records how far the FSM has really applied. raft.AppliedIndex
// only says what was handed to the FSM goroutine, which may not have
// consumed it yet; a linearizable read must wait for the FSM itself.
type trackingFSM struct {
	raft.FSM
	snaps raft.SnapshotStore
	// applied is the index of the last command the FSM returned from, or
	// of the snapshot it last restored. Written only by Raft's FSM
	// goroutine (or NewRaft before that starts); read anywhere.
	applied atomic.Uint64
	// stuck is set, once, when the FSM could not apply an entry (halt.go);
	// onStuck stops the node.
	stuck   atomic.Pointer[error]
	onStuck func(index uint64, err error)
}

func (f *trackingFSM) Apply(l *raft.Log) any {
	if err := f.stuckErr(); err != nil {
		return err
	}
	resp := f.FSM.Apply(l)
	if err, ok := resp.(error); ok {
		return f.stick(l.Index, err)
	}
	f.applied.Store(l.Index)
	return resp
}

// Restore is not told which snapshot it reads. Raft restores the newest one
// in the store (on start) or the one it has just written (on install), so
// that one's index is taken; only a corrupt newest snapshot on start, from
// which raft falls back to an older one, would overstate it.
func (f *trackingFSM) Restore(rc io.ReadCloser) error {
	if err := f.stuckErr(); err != nil {
		rc.Close()
		return err
	}
	if err := f.FSM.Restore(rc); err != nil {
		return err
	}
	if metas, err := f.snaps.List(); err == nil && len(metas) > 0 {
		f.applied.Store(metas[0].Index)
	}
	return nil
}

// fsmHasApplied reports whether the FSM reflects every entry up to idx.
// Entries the FSM never sees (no-ops, barriers, configuration changes) may
// sit above the last applied command, so the log between the two is checked
// for commands still in flight.
func (n *Node) fsmHasApplied(idx uint64) bool {
	if n.verified.Load() >= idx {
		return true
	}
	if n.raft.AppliedIndex() < idx {
		return false
	}
	for i := idx; i > n.fsm.applied.Load(); i-- {
		var l raft.Log
		if err := n.logs.GetLog(i, &l); err != nil {
			if errors.Is(err, raft.ErrLogNotFound) {
				break // compacted into a snapshot the FSM already reflects
			}
			return false
		}
		if l.Type == raft.LogCommand {
			return false
		}
	}
	for {
		cur := n.verified.Load()
		if cur >= idx || n.verified.CompareAndSwap(cur, idx) {
			return true
		}
	}
}
