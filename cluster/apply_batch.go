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

// batchProposers is how many goroutines hand one batch's entries to Raft,
// each waiting for its entry's commit before proposing the next. Raft's
// leader loop takes what is queued, up to MaxAppendEntries (64), into one
// fsync'd write; its queue is unbuffered, so a single proposer would hand
// over one entry per write.
const batchProposers = 64

// batchInFlight bounds the batch entries proposed and not yet committed, in
// all batches together. Beyond the log cache (logCacheSize) the leader reads
// the entries it replicates back from disk, and a larger backlog only costs
// memory and garbage collection: measured, 64 batches of 100 cost the leader
// half as much CPU again per entry as 2 batches of 100.
var batchInFlight = newSlots(logCacheSize / 2)

// slots is a counting semaphore. It is per process, like the log cache it
// protects: a process runs one node (tests that run several share it).
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

// BatchResult is what became of one command of ApplyBatch: the FSM's
// result, or an error as Apply returns them.
type BatchResult struct {
	Result *pb.CommandResult
	Err    error
}

// ApplyBatch commits each command as its own Raft entry, all of them at
// once, so that Raft writes and replicates them together; results[i] is
// cmds[i]'s. The entries are proposed concurrently: their order in the log
// is not the order of cmds.
//
// It runs on the leader only: on any other node it returns ErrNotLeader and
// proposes nothing (the caller forwards the whole batch). Other errors of
// the call itself: ErrShutdown, context errors, a command that does not
// marshal; none proposes anything. Once proposing has begun every outcome is
// per command; a command still uncommitted when ctx ends is
// ErrIndeterminate.
func (n *Node) ApplyBatch(ctx context.Context, cmds []*pb.Command) ([]BatchResult, error) {
	if n.closed.Load() {
		return nil, ErrShutdown
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data := make([][]byte, len(cmds))
	for i, cmd := range cmds {
		if cmd == nil {
			return nil, fmt.Errorf("apply batch: command %d is nil", i)
		}
		b, err := proto.Marshal(cmd)
		if err != nil {
			return nil, fmt.Errorf("apply batch: marshal command %d: %w", i, err)
		}
		data[i] = b
	}
	if n.raft.State() != raft.Leader {
		return nil, ErrNotLeader
	}
	return n.proposeBatch(ctx, data), nil
}

// batch collects the outcomes of one ApplyBatch. The proposers may outlive
// the call (a caller gone before the commit): mu keeps their late writes
// away from the copy the call returns.
type batch struct {
	mu      sync.Mutex
	results []BatchResult
	settled []bool
}

func (b *batch) set(i int, r BatchResult) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.results[i] = r
	b.settled[i] = true
}

// snapshot returns the results so far; unsettled ones get err.
func (b *batch) snapshot(err error) []BatchResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]BatchResult, len(b.results))
	for i, r := range b.results {
		if !b.settled[i] {
			r = BatchResult{Err: err}
		}
		out[i] = r
	}
	return out
}

func (n *Node) proposeBatch(ctx context.Context, data [][]byte) []BatchResult {
	b := &batch{results: make([]BatchResult, len(data)), settled: make([]bool, len(data))}
	timeout := raftTimeout(ctx)
	workers := min(len(data), batchProposers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(data); i += workers {
				if ctx.Err() != nil {
					return // the rest stays unsettled: not proposed
				}
				b.set(i, n.proposeOne(ctx, data[i], timeout))
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

// proposeOne proposes one entry of a batch and waits for its commit.
func (n *Node) proposeOne(ctx context.Context, data []byte, timeout time.Duration) BatchResult {
	if err := batchInFlight.take(ctx); err != nil {
		return BatchResult{Err: err} // nothing proposed
	}
	defer batchInFlight.give()
	f, err := n.proposals.propose(ctx, n.raft, data, timeout)
	if err != nil {
		return BatchResult{Err: err} // nothing proposed
	}
	return futureResult(f)
}

// futureResult waits for f, which Raft always resolves (at the latest on
// shutdown), and maps its outcome like applyLocal.
func futureResult(f raft.ApplyFuture) BatchResult {
	if err := f.Error(); err != nil {
		return BatchResult{Err: raftError(err)}
	}
	switch resp := f.Response().(type) {
	case *pb.CommandResult:
		return BatchResult{Result: resp}
	case error:
		return BatchResult{Err: fmt.Errorf("apply: fsm: %w", resp)}
	default:
		return BatchResult{Err: fmt.Errorf("apply: fsm returned %T, want *pb.CommandResult", resp)}
	}
}
