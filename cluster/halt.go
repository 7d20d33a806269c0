package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// A node whose FSM cannot apply a committed entry (a command of a kind its
// build does not know) must not go on: skipping the entry, or answering it
// in a way its peers do not, leaves its state different from theirs. The
// FSM does no I/O and cannot stop anything, so it says so by returning an
// error value from Apply; the wrapper then applies nothing more and refuses
// snapshots (one taken now would claim the entry applied, and a restart
// from it would skip the entry for good), and the node shuts Raft down and
// closes Halted. The composition root exits non-zero on it; once the
// operator upgrades the node, it replays the entry from its log.

// haltShutdownTimeout bounds the leadership transfer of a halting leader.
const haltShutdownTimeout = 10 * time.Second

// stick records that the FSM could not apply the entry at index and starts
// the node's stop. It runs on Raft's FSM goroutine, so the stop itself runs
// on another: Raft's shutdown waits for this goroutine.
func (f *trackingFSM) stick(index uint64, cause error) error {
	err := fmt.Errorf("%w: %w", ErrHalted, cause)
	if f.stuck.CompareAndSwap(nil, &err) && f.onStuck != nil {
		f.onStuck(index, err)
	}
	return err
}

func (f *trackingFSM) stuckErr() error {
	if p := f.stuck.Load(); p != nil {
		return *p
	}
	return nil
}

// Snapshot refuses once the FSM is stuck: see above.
func (f *trackingFSM) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.stuckErr(); err != nil {
		return nil, err
	}
	return f.FSM.Snapshot()
}

// halt logs why the node stops at the entry at index, closes Halted and
// shuts Raft down.
func (n *Node) halt(index uint64, err error) {
	n.haltErr = err
	close(n.halted)
	n.log.Error("stopping this node: it cannot apply a committed log entry", "index", index, "err", err)
	go func() {
		select {
		case <-n.raftUp:
		case <-n.stopWatch: // Raft never came up, or is shut down already
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), haltShutdownTimeout)
		defer cancel()
		if serr := n.Shutdown(ctx); serr != nil {
			n.log.Warn("shutdown after halt", "err", serr)
		}
	}()
}

// Halted is closed when the node has stopped itself because its FSM cannot
// apply a committed entry; HaltErr says why. The process should exit
// non-zero so that the node is upgraded, not left running without Raft.
func (n *Node) Halted() <-chan struct{} { return n.halted }

// HaltErr is why the node halted (it wraps ErrHalted and the FSM's error),
// or nil while it has not.
func (n *Node) HaltErr() error {
	select {
	case <-n.halted:
		return n.haltErr
	default:
		return nil
	}
}
