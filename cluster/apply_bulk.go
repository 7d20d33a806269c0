package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// bulkProposers is how many goroutines hand one ApplyBulk's entries to Raft,
// each waiting for its entry's commit before proposing the next. Raft's
// leader loop takes what is queued, up to MaxAppendEntries (64), into one
// fsync'd write; its queue is unbuffered, so a single proposer would hand
// over one entry per write.
const bulkProposers = 64

// bulkInFlight bounds the entries a node has proposed through ApplyBulk and
// not yet seen committed, over all its calls together. Beyond the log cache
// (logCacheSize) the leader reads the entries it replicates back from disk,
// and a larger backlog only costs memory and garbage collection: measured,
// 64 calls of 100 cost the leader half as much CPU again per entry as 2
// calls of 100.
const bulkInFlight = logCacheSize / 2

// slots is a counting semaphore. Each node has its own (Node.bulkSem), like
// the log cache it protects.
type slots chan struct{}

func newSlots(n int) slots { return make(slots, n) }

// take waits for a slot or ctx.
func (s slots) take(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s slots) give() { <-s }

// BulkResult is what became of one command of ApplyBulk: the FSM's
// result, or an error as Apply returns them.
type BulkResult struct {
	Result *pb.CommandResult
	Err    error
}

// ApplyBulk commits each command as its own Raft entry, all of them at
// once, so that Raft writes and replicates them together; results[i] is
// cmds[i]'s. The entries are proposed concurrently: their order in the log
// is not the order of cmds.
//
// It runs on the leader only: on any other node it returns ErrNotLeader and
// proposes nothing (the caller forwards the whole call). Every command is
// stamped with the leader's clock, as Apply does. Other errors of the call
// itself: ErrShutdown, context errors, a command that does not marshal or
// that only the scheduler proposes (ErrNotForwardable); none proposes
// anything. Once proposing has begun every outcome is per command: one
// whose version a voter does not apply is ErrUnsupportedCommand and not
// proposed; one still uncommitted when ctx ends is ErrIndeterminate.
func (n *Node) ApplyBulk(ctx context.Context, cmds []*pb.Command) ([]BulkResult, error) {
	if n.closed.Load() {
		return nil, ErrShutdown
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !n.proposes() {
		return nil, ErrNotLeader
	}
	data := make([][]byte, len(cmds))
	for i, cmd := range cmds {
		if cmd == nil {
			return nil, fmt.Errorf("apply bulk: command %d is nil", i)
		}
		if err := forwardable(cmd); err != nil {
			return nil, fmt.Errorf("apply bulk: command %d: %w", i, err)
		}
		n.stamp(cmd)
		b, err := proto.Marshal(cmd)
		if err != nil {
			return nil, fmt.Errorf("apply bulk: marshal command %d: %w", i, err)
		}
		data[i] = b
	}
	return n.proposeBulk(ctx, cmds, data), nil
}

// bulk collects the outcomes of one ApplyBulk. The proposers may outlive
// the call (a caller gone before the commit): mu keeps their late writes
// away from the copy the call returns.
type bulk struct {
	mu      sync.Mutex
	results []BulkResult
	settled []bool
}

func (b *bulk) set(i int, r BulkResult) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.results[i] = r
	b.settled[i] = true
}

// snapshot returns the results so far; unsettled ones get err.
func (b *bulk) snapshot(err error) []BulkResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]BulkResult, len(b.results))
	for i, r := range b.results {
		if !b.settled[i] {
			r = BulkResult{Err: err}
		}
		out[i] = r
	}
	return out
}

func (n *Node) proposeBulk(ctx context.Context, cmds []*pb.Command, data [][]byte) []BulkResult {
	b := &bulk{results: make([]BulkResult, len(data)), settled: make([]bool, len(data))}
	timeout := raftTimeout(ctx)
	workers := min(len(data), bulkProposers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(data); i += workers {
				if ctx.Err() != nil {
					return // the rest stays unsettled: not proposed
				}
				b.set(i, n.proposeOne(ctx, cmds[i], data[i], timeout))
			}
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		// Only an ended ctx leaves entries unsettled, before proposing them.
		return b.snapshot(ctx.Err())
	case <-ctx.Done():
		// Raft holds what was proposed; it may still commit.
		return b.snapshot(fmt.Errorf("apply: %w: %w", ErrIndeterminate, ctx.Err()))
	}
}

// proposeOne proposes one entry of an ApplyBulk, data being cmd marshalled,
// and waits for its commit.
func (n *Node) proposeOne(ctx context.Context, cmd *pb.Command, data []byte, timeout time.Duration) BulkResult {
	if err := n.admit(ctx, cmd); err != nil {
		return BulkResult{Err: err} // nothing proposed
	}
	if err := n.bulkSem.take(ctx); err != nil {
		return BulkResult{Err: err} // nothing proposed
	}
	defer n.bulkSem.give()
	f, err := n.proposals.propose(ctx, n.raft, data, timeout)
	if err != nil {
		return BulkResult{Err: err} // nothing proposed
	}
	return n.futureResult(f)
}

// futureResult waits for f whatever the caller's deadline, so the slot
// stays taken while the entry is in flight, and maps its outcome as Apply
// does.
func (n *Node) futureResult(f raft.ApplyFuture) BulkResult {
	if err := n.awaitProposal(context.Background(), f); err != nil {
		return BulkResult{Err: proposalError(err)}
	}
	res, err := appliedResult(f)
	return BulkResult{Result: res, Err: err}
}
