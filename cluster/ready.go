package cluster

import (
	"sort"

	"github.com/hashicorp/raft"
)

// Ready reports whether the node knows a leader, has learned the commit
// index from that leader, and its FSM has applied up to it, and no Raft
// disk write of it is stalled.
//
// The middle condition matters after a restart: Raft restores the snapshot,
// but the commit index starts at zero and the log after the snapshot is
// replayed only once the leader says what is committed, so "applied >=
// commit" alone holds too early. Every leader commits an entry of its own
// term first, so a commit index at or past the start of the current term
// is one learned from the current leader.
func (n *Node) Ready() bool {
	if n.closed.Load() || n.raft.State() == raft.Shutdown || n.disk.stalled() {
		return false
	}
	if _, addr := n.Leader(); addr == "" {
		return false
	}
	commit := n.raft.CommitIndex()
	start, ok := n.currentTermStart()
	if !ok || commit < start {
		return false
	}
	return n.fsmHasApplied(commit)
}

type termStart struct{ term, index uint64 }

// currentTermStart finds the first index of the current term in the local
// log (terms never decrease along the log, so a binary search does) or, if
// the log holds none, in the newest snapshot. False: this node has no entry
// of the current term yet.
func (n *Node) currentTermStart() (uint64, bool) {
	term := n.raft.CurrentTerm()
	if ts := n.termStart.Load(); ts != nil && ts.term == term {
		return ts.index, true
	}
	first, err1 := n.logs.FirstIndex()
	last, err2 := n.logs.LastIndex()
	if err1 != nil || err2 != nil {
		return 0, false
	}
	var index uint64
	if t, ok := n.logTerm(last); ok && t == term {
		var failed bool
		off := sort.Search(int(last-first+1), func(i int) bool {
			t, ok := n.logTerm(first + uint64(i))
			failed = failed || !ok
			return t >= term
		})
		if failed {
			return 0, false
		}
		index = first + uint64(off)
	} else {
		metas, err := n.fsm.snaps.List()
		if err != nil || len(metas) == 0 || metas[0].Term != term {
			return 0, false
		}
		// The term began at or before the snapshot; committing past the
		// snapshot is what the leader's first message teaches.
		index = metas[0].Index
	}
	n.termStart.Store(&termStart{term: term, index: index})
	return index, true
}

func (n *Node) logTerm(index uint64) (uint64, bool) {
	if index == 0 {
		return 0, false
	}
	var l raft.Log
	if err := n.logs.GetLog(index, &l); err != nil {
		return 0, false
	}
	return l.Term, true
}
