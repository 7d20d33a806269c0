package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// proposalGate lets a restore stop this node from proposing commands. A
// proposal holds the read lock only while Raft enqueues it, so pause, once
// it has the write lock, knows every earlier proposal is in Raft's queue
// (a barrier then waits for all of them) and no later one can be until
// resume.
type proposalGate struct {
	mu sync.RWMutex
	// paused is non-nil while a restore runs; resume closes it.
	paused chan struct{}
}

// propose enqueues data with Raft unless a restore runs; then it waits for
// the restore to end, or ctx.
func (g *proposalGate) propose(ctx context.Context, r *raft.Raft, data []byte, timeout time.Duration) (raft.ApplyFuture, error) {
	for {
		g.mu.RLock()
		wait := g.paused
		if wait == nil {
			f := r.Apply(data, timeout)
			g.mu.RUnlock()
			return f, nil
		}
		g.mu.RUnlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// pause stops new proposals. Only one restore runs at a time.
func (g *proposalGate) pause(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused != nil {
		return ErrRestoreRunning
	}
	g.paused = make(chan struct{})
	return nil
}

// resume lets the waiting proposals go.
func (g *proposalGate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.paused)
	g.paused = nil
}
