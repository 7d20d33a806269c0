package worker

import (
	"sync"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// maxQueuedOutcomes bounds the outcomes kept while no stream is up; the
// oldest go first (the leader has re-dispatched those attempts by then).
const maxQueuedOutcomes = 10_000

// outbox holds outcomes until a session sends them. It outlives sessions:
// an attempt that ends while the worker reconnects reports on the next
// stream (the leader takes it late, or ignores it).
type outbox struct {
	mu     sync.Mutex
	queue  []*pb.WorkerOutcome
	signal chan struct{} // cap 1
}

func newOutbox() *outbox { return &outbox{signal: make(chan struct{}, 1)} }

func (o *outbox) add(x *pb.WorkerOutcome) {
	o.mu.Lock()
	o.queue = append(o.queue, x)
	if n := len(o.queue) - maxQueuedOutcomes; n > 0 {
		o.queue = append(o.queue[:0], o.queue[n:]...)
	}
	o.mu.Unlock()
	o.notify()
}

func (o *outbox) notify() {
	select {
	case o.signal <- struct{}{}:
	default:
	}
}

// take removes up to n outcomes, oldest first.
func (o *outbox) take(n int) []*pb.WorkerOutcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	n = min(n, len(o.queue))
	out := make([]*pb.WorkerOutcome, n)
	copy(out, o.queue)
	o.queue = append(o.queue[:0], o.queue[n:]...)
	return out
}

// putBack returns outcomes a failed send took, ahead of the rest.
func (o *outbox) putBack(x []*pb.WorkerOutcome) {
	if len(x) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queue = append(x, o.queue...)
}

func (o *outbox) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.queue)
}
