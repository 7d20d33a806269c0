package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Raft's apply queue is buffered (BatchApplyCh, see raftConfig). When Raft
// stops (Shutdown, or by itself once this node's removal commits) it
// answers neither what still waits in that queue nor committed entries its
// FSM loop had not taken yet: their futures never resolve. So a wait on a
// proposal also watches for Raft's stop, leaves the future strandedWait to
// be answered, and then calls its outcome unknown: an entry left in the
// queue was never written, one handed to the FSM loop was committed, and
// nothing tells the two apart.
const strandedWait = time.Second

// raftStop is closed once Raft has entered its Shutdown state.
type raftStop struct {
	once sync.Once
	ch   chan struct{}
}

func newRaftStop() *raftStop { return &raftStop{ch: make(chan struct{})} }

// observer closes s from within Raft's own state change, so no wait that
// starts later misses it; it passes no observation on.
func (s *raftStop) observer() *raft.Observer {
	return raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		if o.Data == raft.Shutdown {
			s.once.Do(func() { close(s.ch) })
		}
		return false
	})
}

var errStranded = errors.New("raft stopped without answering")

// awaitProposal waits for f, the future of a proposal, or ctx; once Raft
// has stopped, for strandedWait at most.
func (n *Node) awaitProposal(ctx context.Context, f raft.Future) error {
	return awaitFuture(ctx, f, n.raftStop.ch)
}

// awaitFuture waits for f or ctx and, once stopped is closed (never if
// nil), for strandedWait at most. The goroutine waiting on a stranded
// future stays blocked: Raft never answers it.
func awaitFuture(ctx context.Context, f raft.Future, stopped <-chan struct{}) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	var expired <-chan time.Time
	for {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-stopped:
			stopped = nil
			t := time.NewTimer(strandedWait)
			defer t.Stop()
			expired = t.C
		case <-expired:
			return errStranded
		}
	}
}

// proposalError maps the error of a proposal's future. Raft answers
// ErrRaftShutdown both to a proposal it never queued and to a committed
// one its FSM loop never took: either may be, so it is indeterminate, as
// is a stranded proposal.
func proposalError(err error) error {
	if errors.Is(err, raft.ErrRaftShutdown) || errors.Is(err, errStranded) {
		return fmt.Errorf("apply: %w: %w", ErrIndeterminate, err)
	}
	return raftError(err)
}
